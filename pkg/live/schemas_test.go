package live

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/kube-openapi/pkg/spec3"
)

// TestComponents: the schemas decoded alone are the full document's, and
// a document that is not JSON is an error.
func TestComponents(t *testing.T) {
	const doc = `{"openapi":"3.0.0","info":{"title":"Kubernetes","version":"v1.37.2"},
"paths":{"/api/v1/configmaps":{"get":{"operationId":"listConfigMaps","responses":{"200":{"description":"OK"}}}}},
"components":{"schemas":{"io.k8s.api.core.v1.ConfigMap":{"type":"object",
"properties":{"data":{"type":"object","additionalProperties":{"type":"string","default":""}},
"metadata":{"allOf":[{"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],"default":{}}},
"x-kubernetes-group-version-kind":[{"group":"","kind":"ConfigMap","version":"v1"}]},
"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta":{"type":"object","properties":{"name":{"type":"string"},
"finalizers":{"type":"array","items":{"type":"string","default":""},"x-kubernetes-list-type":"set"}}}}}}`
	cases := []struct {
		name, doc string
		schemas   int
		fails     bool
	}{
		{"paths and components", doc, 2, false},
		{"components named in values and nested keys first", `{"other":"components","more":{"components":{"schemas":{}}},"x":["components",{"components":1}],"k\\\"components":"}{][","n":-1.5e3,"t":true,"z":null,` + doc[1:], 2, false},
		{"spaces and line breaks", " \n{ \"paths\" : { } ,\r\n\t\"components\" :" + doc[strings.Index(doc, `"components":`)+len(`"components":`):] + " \n", 2, false},
		{"empty", `{}`, 0, false},
		{"an unterminated string before", `{"paths":"a,"components":{"schemas":{}}}`, 0, true},
		{"a member without a value", `{"paths":,"components":{}}`, 0, true},
		{"no colon", `{"paths" {}}`, 0, true},
		{"an array", `[{"components":{}}]`, 0, true},
		{"no components", `{"openapi":"3.0.0","paths":{}}`, 0, false},
		{"not JSON", `{"components":`, 0, true},
		{"schemas not an object", `{"components":{"schemas":[]}}`, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := components([]byte(c.doc))
			if (err != nil) != c.fails {
				t.Fatalf("error %v, want failure %v", err, c.fails)
			}
			if c.fails {
				return
			}
			var want spec3.OpenAPI
			if err := json.Unmarshal([]byte(c.doc), &want); err != nil {
				t.Fatal(err)
			}
			var gotSchemas, wantSchemas int
			if got.Components != nil {
				gotSchemas = len(got.Components.Schemas)
			}
			if want.Components != nil {
				wantSchemas = len(want.Components.Schemas)
				g, err := json.Marshal(got.Components.Schemas)
				if err != nil {
					t.Fatal(err)
				}
				w, err := json.Marshal(want.Components.Schemas)
				if err != nil {
					t.Fatal(err)
				}
				if string(g) != string(w) {
					t.Errorf("schemas %s, the full document's %s", g, w)
				}
			}
			if gotSchemas != c.schemas || wantSchemas != c.schemas {
				t.Errorf("%d schemas (full decode %d), want %d", gotSchemas, wantSchemas, c.schemas)
			}
		})
	}
}
