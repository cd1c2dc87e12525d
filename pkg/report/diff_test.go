package report

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// TestYAMLPairIsWholeEncoding checks that yamlPair, which encodes runs of
// top-level fields apart and the equal ones once, gives the lines of
// encoding each side whole, whatever fields differ, are missing on one
// side, or hold values the encoder wraps or writes at column 0 (both
// through the guard, as the report encodes them).
func TestYAMLPairIsWholeEncoding(t *testing.T) {
	long := strings.Repeat("word ", 40)
	base := func() map[string]interface{} {
		return map[string]interface{}{
			"apiVersion": "apps/v1",
			"kind":       "Deployment",
			"metadata": map[string]interface{}{
				"name":   "d",
				"labels": map[string]interface{}{"app.kubernetes.io/version": "1"},
			},
			"spec": map[string]interface{}{
				"replicas": int64(1),
				"template": map[string]interface{}{"spec": map[string]interface{}{"containers": []interface{}{map[string]interface{}{"name": "c", "image": "nginx:1.25"}}}},
			},
			"items":  []interface{}{"a", map[string]interface{}{"b": nil}, []interface{}{}},
			"note":   long,
			"status": map[string]interface{}{},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(m map[string]interface{})
	}{
		{"nothing", func(map[string]interface{}) {}},
		{"a label", func(m map[string]interface{}) {
			m["metadata"].(map[string]interface{})["labels"] = map[string]interface{}{"app.kubernetes.io/version": "2"}
		}},
		{"first and last fields", func(m map[string]interface{}) {
			m["apiVersion"], m["status"] = "apps/v2", map[string]interface{}{"x": true}
		}},
		{"consecutive fields", func(m map[string]interface{}) { m["items"], m["kind"] = []interface{}{}, "StatefulSet" }},
		{"a field added", func(m map[string]interface{}) { m["data"] = map[string]interface{}{"k": long + "\nline"} }},
		{"a field removed", func(m map[string]interface{}) { delete(m, "spec") }},
		{"a wrapped string", func(m map[string]interface{}) { m["note"] = long + "more" }},
		{"a number's type", func(m map[string]interface{}) { m["spec"].(map[string]interface{})["replicas"] = float64(1) }},
		{"a nil map", func(m map[string]interface{}) { m["status"] = map[string]interface{}(nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, after := base(), base()
			tc.change(after)
			c := &plan.Change{ID: manifest.ObjectID{Kind: "Deployment", Name: "d"}}
			a, b, err := yamlPair(c, &unstructured.Unstructured{Object: before}, &unstructured.Unstructured{Object: after})
			if err != nil {
				t.Fatal(err)
			}
			wantA, err := marshalLines(c, guard(c, before))
			if err != nil {
				t.Fatal(err)
			}
			wantB, err := marshalLines(c, guard(c, after))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(a, "") != strings.Join(wantA, "") {
				t.Errorf("before:\n%s\nwant:\n%s", strings.Join(a, ""), strings.Join(wantA, ""))
			}
			if strings.Join(b, "") != strings.Join(wantB, "") {
				t.Errorf("after:\n%s\nwant:\n%s", strings.Join(b, ""), strings.Join(wantB, ""))
			}
		})
	}
}
