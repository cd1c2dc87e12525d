package redact

import (
	"encoding/base64"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestObject(t *testing.T) {
	secret := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]interface{}{"name": "s", "annotations": map[string]interface{}{LastAppliedAnnotation: `{"data":{"pw":"aHVudGVyMg=="}}`}},
		"data":       map[string]interface{}{"pw": base64.StdEncoding.EncodeToString([]byte("hunter2"))},
		"stringData": map[string]interface{}{"pw": "hunter2"},
	}}
	masked := Object(secret)
	data := masked.Object["data"].(map[string]interface{})["pw"].(string)
	str := masked.Object["stringData"].(map[string]interface{})["pw"].(string)
	if data != str || !strings.HasPrefix(data, maskedPrefix) || !strings.Contains(data, "7 bytes") {
		t.Fatalf("data %q and stringData %q: want the same masked value of 7 bytes", data, str)
	}
	if ann := masked.GetAnnotations()[LastAppliedAnnotation]; strings.Contains(ann, "aHVudGVy") {
		t.Fatalf("last-applied annotation not masked: %q", ann)
	}
	if again := Object(masked); again.Object["data"].(map[string]interface{})["pw"] != data {
		t.Fatal("masking twice changed the value")
	}
	if secret.Object["stringData"].(map[string]interface{})["pw"] != "hunter2" {
		t.Fatal("Object modified its input")
	}
	cm := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]interface{}{"k": "visible"}}}
	if Object(cm).Object["data"].(map[string]interface{})["k"] != "visible" {
		t.Fatal("a ConfigMap value was masked")
	}
}
