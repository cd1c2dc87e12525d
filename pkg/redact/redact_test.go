package redact

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const canary = "hunter2-canary"

var canaryB64 = base64.StdEncoding.EncodeToString([]byte(canary))

func object(apiVersion, kind string, fields map[string]interface{}) *unstructured.Unstructured {
	o := map[string]interface{}{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]interface{}{"name": "x"}}
	for k, v := range fields {
		o[k] = v
	}
	return &unstructured.Unstructured{Object: o}
}

// TestObjectFailsClosed: every shape of Secret, and every object whose data
// cannot be told apart from a Secret's, has data and stringData masked.
func TestObjectFailsClosed(t *testing.T) {
	data := func() map[string]interface{} {
		return map[string]interface{}{"data": map[string]interface{}{"pw": canaryB64}}
	}
	stringData := func() map[string]interface{} {
		return map[string]interface{}{"stringData": map[string]interface{}{"pw": canary}}
	}
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		mask bool
	}{
		{"Secret data", object("v1", "Secret", data()), true},
		{"Secret stringData", object("v1", "Secret", stringData()), true},
		{"lower-case kind", object("v1", "secret", stringData()), true},
		{"upper-case kind", object("v1", "SECRET", data()), true},
		{"other group", object("example.com/v1", "Secret", data()), true},
		{"unknown kind with data", object("v1", "Sekret", data()), true},
		{"unknown kind with stringData", object("example.com/v1", "Widget", stringData()), true},
		{"ConfigMap of another group", object("example.com/v1", "ConfigMap", data()), true},
		{"lower-case configmap", object("v1", "configmap", data()), true},
		{"ConfigMap with stringData", object("v1", "ConfigMap", stringData()), true},
		{"Secret with data not a map", object("v1", "Secret", map[string]interface{}{"data": canaryB64}), true},
		{"Secret with a nested value", object("v1", "secret", map[string]interface{}{"data": map[string]interface{}{"pw": map[string]interface{}{"v": canary}}}), true},
		{"ConfigMap", object("v1", "ConfigMap", data()), false},
		{"Deployment", object("apps/v1", "Deployment", map[string]interface{}{"spec": map[string]interface{}{"pw": canary}}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := json.Marshal(tt.obj.Object)
			if got := Sensitive(tt.obj); got != tt.mask {
				t.Fatalf("Sensitive = %v, want %v", got, tt.mask)
			}
			out, _ := json.Marshal(NewMasker().Object(tt.obj).Object)
			leaked := strings.Contains(string(out), canary) || strings.Contains(string(out), canaryB64)
			if tt.mask && leaked {
				t.Errorf("value not masked: %s", out)
			}
			if !tt.mask && !leaked {
				t.Errorf("a value that is not secret was masked: %s", out)
			}
			if after, _ := json.Marshal(tt.obj.Object); string(after) != string(before) {
				t.Error("Object modified its input")
			}
		})
	}
}

func TestObject(t *testing.T) {
	secret := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]interface{}{"name": "s", "annotations": map[string]interface{}{LastAppliedAnnotation: `{"data":{"pw":"aHVudGVyMg=="}}`}},
		"data":       map[string]interface{}{"pw": base64.StdEncoding.EncodeToString([]byte("hunter2"))},
		"stringData": map[string]interface{}{"pw": "hunter2"},
	}}
	m := NewMasker()
	masked := m.Object(secret)
	data := masked.Object["data"].(map[string]interface{})["pw"].(string)
	str := masked.Object["stringData"].(map[string]interface{})["pw"].(string)
	if data != str || !IsMasked(data) {
		t.Fatalf("data %q and stringData %q: want the same masked value", data, str)
	}
	if ann := masked.GetAnnotations()[LastAppliedAnnotation]; strings.Contains(ann, "aHVudGVy") {
		t.Fatalf("last-applied annotation not masked: %q", ann)
	}
	if again := m.Object(masked); again.Object["data"].(map[string]interface{})["pw"] != data {
		t.Fatal("masking twice changed the value")
	}
	if secret.Object["stringData"].(map[string]interface{})["pw"] != "hunter2" {
		t.Fatal("Object modified its input")
	}
	cm := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]interface{}{"k": "visible"}}}
	if m.Object(cm) != cm {
		t.Fatal("a ConfigMap without a last-applied annotation was copied")
	}
}

func TestMasker(t *testing.T) {
	a, b := NewMasker(), NewMasker()
	tests := []struct {
		name string
		ok   bool
	}{
		{"equal values mask alike under one key", a.Value([]byte("pw-1")) == a.Value([]byte("pw-1"))},
		{"different values differ", a.Value([]byte("pw-1")) != a.Value([]byte("pw-2"))},
		{"another key gives another marker", a.Value([]byte("pw-1")) != b.Value([]byte("pw-1"))},
		{"a saved key masks alike", (&Masker{Key: a.Key}).Value([]byte("pw-1")) == a.Value([]byte("pw-1"))},
		{"markers are recognised", IsMasked(a.Value([]byte("x"))) && IsMasked((*Masker)(nil).Value([]byte("x")))},
		{"a value that only starts like a marker is not", !IsMasked("(sensitive: hunter2")},
		{"the length is not printed", a.Value([]byte("short")) != "" && len(a.Value([]byte("short"))) == len(a.Value([]byte(strings.Repeat("long", 100))))},
		{"nil masks without a key", (*Masker)(nil).Value([]byte("x")) == "(sensitive)"},
		{"Unkeyed drops the key", Unkeyed("map[pw:"+a.Value([]byte("x"))+"]") == Unkeyed("map[pw:"+b.Value([]byte("x"))+"]")},
	}
	for _, tt := range tests {
		if !tt.ok {
			t.Error(tt.name)
		}
	}
	if len(a.Key) != KeySize || string(a.Key) == string(b.Key) {
		t.Fatal("NewMasker keys are not random 32-byte keys")
	}
}

// TestMayHoldSecrets: only objects whose decoding cannot give the
// sanitiser a value are passed over; anything it cannot rule out counts.
func TestMayHoldSecrets(t *testing.T) {
	tests := []struct {
		apiVersion, kind, json string
		want                   bool
	}{
		{"v1", "Secret", `{"metadata":{"name":"s"}}`, true},
		{"v1", "secret", `{"metadata":{"name":"s"}}`, true},
		{"v1", "ConfigMap", `{"metadata":{"name":"c"},"data":{"k":"v"}}`, false},
		{"v1", "ConfigMap", `{"metadata":{"name":"c","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}}}`, true},
		{"example.com/v1", "ConfigMap", `{"metadata":{"name":"c"},"data":{"k":"v"}}`, true},
		{"example.com/v1", "Thing", `{"metadata":{"name":"t"},"spec":{"stringData":{}}}`, true},
		{"apps/v1", "Deployment", `{"metadata":{"name":"d"},"spec":{"replicas":1}}`, false},
		{"v1", "Service", `{"metadata":{"name":"svc","labels":{"data":"x"}}}`, true}, // a key data anywhere: not ruled out
	}
	for _, tt := range tests {
		if got := MayHoldSecrets(tt.apiVersion, tt.kind, []byte(tt.json)); got != tt.want {
			t.Errorf("%s %s %s: %v, want %v", tt.apiVersion, tt.kind, tt.json, got, tt.want)
		}
	}
}

// TestObjectMasksMisspelledSecretFields (issue 26): a Secret's payload
// under a misspelled field (the API server drops it with a warning) is
// still the chart's secret: masked in the object and known to the
// sanitiser; type and metadata stay readable.
func TestObjectMasksMisspelledSecretFields(t *testing.T) {
	secret := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
		"metadata":  map[string]interface{}{"name": "s"},
		"strinData": map[string]interface{}{"pw": "correct-horse-battery"},
	}}
	masked := NewMasker().Object(secret)
	if pw, _ := masked.Object["strinData"].(map[string]interface{})["pw"].(string); !IsMasked(pw) {
		t.Errorf("strinData.pw = %q, want masked", pw)
	}
	if masked.Object["type"] != "Opaque" || masked.GetName() != "s" {
		t.Errorf("type and metadata masked: %v", masked.Object)
	}
	san := NewSanitizer(NewMasker())
	san.Add(secret)
	if got := san.String("denied: correct-horse-battery"); strings.Contains(got, "correct-horse") {
		t.Errorf("sanitised message %q still holds the value", got)
	}
}
