package predict

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// TestMarshalContentDecodesAsEncodingJSON: what the patch functions decode
// from marshalContent is what they decoded from encoding/json's Marshal,
// for every type and odd string an object holds, and the same error for
// what JSON cannot hold.
func TestMarshalContentDecodesAsEncodingJSON(t *testing.T) {
	odd := []string{"", "plain", `quote " and \ backslash`, "new\nline\r\ttab", "\x00\x01\x1f\x7f", "ünïcödé ✓ 🚀",
		"\xff\xfe invalid utf-8 \xc3", "\u2028\u2029", "<html>&amp;</html>", "123", "1.5", "true", "null", "{}", "[]"}
	var list []interface{}
	strs := map[string]interface{}{}
	for i, s := range odd {
		list = append(list, s)
		strs[s+string(rune('a'+i))] = s
	}
	tests := []map[string]interface{}{
		{},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "x", "labels": map[string]interface{}{"a": "b"}}, "data": strs},
		{"list": list, "empty": []interface{}{}, "nilList": []interface{}(nil), "nilMap": map[string]interface{}(nil), "null": nil},
		{"int": int64(80), "neg": int64(-1), "max": int64(math.MaxInt64), "min": int64(math.MinInt64), "zero": int64(0), "t": true, "f": false},
		{"float": 1.5, "wholeFloat": 2.0, "big": 1e21, "small": 1e-7, "negZero": math.Copysign(0, -1), "int": 3, "int32": int32(4), "uint": uint64(5)},
		{"typed": map[string]string{"a": "b"}, "strings": []string{"x", "y"}, "nested": []interface{}{map[string]interface{}{"name": "c", "ports": []interface{}{map[string]interface{}{"port": int64(80)}}}}},
	}
	for i, content := range tests {
		got, err := marshalContent(content)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		want, err := json.Marshal(content)
		if err != nil {
			t.Fatal(err)
		}
		var g, w map[string]interface{}
		if err := utiljson.Unmarshal(got, &g); err != nil {
			t.Fatalf("%d: %s does not decode: %v", i, got, err)
		}
		if err := utiljson.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%d: decodes as\n%#v\nwant\n%#v", i, g, w)
		}
	}
	for _, bad := range []interface{}{math.NaN(), math.Inf(1), func() {}} {
		_, err := marshalContent(map[string]interface{}{"a": []interface{}{bad}})
		_, want := json.Marshal(map[string]interface{}{"a": []interface{}{bad}})
		if err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("%v: error %v, want %v", bad, err, want)
		}
	}
}

// deployment is a Deployment as a chart renders it, as it was last
// released (image 1.25) and as it is live (defaults, status).
func deployment(image string, live bool) *unstructured.Unstructured {
	spec := map[string]interface{}{
		"replicas": int64(1),
		"selector": map[string]interface{}{"matchLabels": map[string]interface{}{"app": "d"}},
		"template": map[string]interface{}{
			"metadata": map[string]interface{}{"labels": map[string]interface{}{"app": "d"}},
			"spec": map[string]interface{}{"containers": []interface{}{map[string]interface{}{
				"name": "c", "image": "nginx:" + image,
				"env": []interface{}{map[string]interface{}{"name": "A", "value": "x"}, map[string]interface{}{"name": "B", "value": strings.Repeat("y", 40)}},
			}}},
		},
	}
	obj := map[string]interface{}{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]interface{}{"name": "d", "namespace": "ns", "labels": map[string]interface{}{"app.kubernetes.io/version": "1"}},
		"spec":     spec}
	if live {
		spec["strategy"] = map[string]interface{}{"type": "RollingUpdate", "rollingUpdate": map[string]interface{}{"maxSurge": "25%", "maxUnavailable": "25%"}}
		spec["revisionHistoryLimit"] = int64(10)
		obj["status"] = map[string]interface{}{"observedGeneration": int64(1), "replicas": int64(1)}
	}
	return &unstructured.Unstructured{Object: obj}
}

// TestPatchUnchangedByEncoding: the patch of an image change and of no
// change, as encoding/json's Marshal of the three objects gave them.
func TestPatchUnchangedByEncoding(t *testing.T) {
	p := NewPatcher()
	for _, image := range []string{"1.25", "1.26"} {
		last, next, live := deployment("1.25", false), deployment(image, false), deployment("1.25", true)
		got, _, err := p.Patch(last, next, live)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := json.Marshal(last.Object)
		n, _ := json.Marshal(next.Object)
		c, _ := json.Marshal(live.Object)
		want, err := threeWay(p, next, o, n, c)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("image %s: patch %s, want %s", image, got, want)
		}
	}
}

func BenchmarkPatch(b *testing.B) {
	p := NewPatcher()
	last, next, live := deployment("1.25", false), deployment("1.26", false), deployment("1.25", true)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := p.Patch(last, next, live); err != nil {
			b.Fatal(err)
		}
	}
}

// threeWay is Helm's three-way patch of the encoded objects, as Patch
// computes it for target's kind.
func threeWay(p *Patcher, target *unstructured.Unstructured, original, modified, current []byte) ([]byte, error) {
	meta, err := strategicpatch.NewPatchMetaFromStruct(p.typed(target.GroupVersionKind()))
	if err != nil {
		return nil, err
	}
	return strategicpatch.CreateThreeWayMergePatch(original, modified, current, meta, true)
}
