package live

import (
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

func TestWithoutManagedFields(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"last member", `{"metadata":{"name":"a","managedFields":[{"manager":"helm","fieldsV1":{"f:data":{".":{}}}}]},"data":{"k":"v"}}`,
			`{"metadata":{"name":"a"},"data":{"k":"v"}}`},
		{"first member", `{"metadata":{"managedFields":[{"manager":"x"}],"name":"a"}}`, `{"metadata":{"name":"a"}}`},
		{"only member", `{"metadata":{"managedFields":[]}}`, `{"metadata":{}}`},
		{"middle member, spaced", `{ "metadata" : { "name" : "a" , "managedFields" : [ ] , "uid" : "u" } }`, `{ "metadata" : { "name" : "a"  , "uid" : "u" } }`},
		{"first member, spaced", "{\"metadata\":{ \"managedFields\": null ,\n \"name\":\"a\"}}", "{\"metadata\":{ \"name\":\"a\"}}"},
		{"strings with braces and escapes", `{"data":{"k":"}\"{,managedFields"},"metadata":{"annotations":{"x":"\\\"managedFields\":"},"managedFields":[{"a":"]}"}]}}`,
			`{"data":{"k":"}\"{,managedFields"},"metadata":{"annotations":{"x":"\\\"managedFields\":"}}}`},
		{"nested managedFields elsewhere kept", `{"spec":{"metadata":{"managedFields":[1]}},"metadata":{"name":"a"}}`, `{"spec":{"metadata":{"managedFields":[1]}},"metadata":{"name":"a"}}`},
		{"none", `{"metadata":{"name":"a"}}`, `{"metadata":{"name":"a"}}`},
		{"metadata not an object", `{"metadata":[{"managedFields":1}]}`, `{"metadata":[{"managedFields":1}]}`},
		{"not an object", `[1,2]`, `[1,2]`},
		{"cut short", `{"metadata":{"managedFields":[1,2`, `{"metadata":{"managedFields":[1,2`},
		{"numbers and literals", `{"metadata":{"generation":12,"managedFields":[{"n":-1.5e3,"t":true,"f":false,"z":null}],"deletionGracePeriodSeconds":30}}`,
			`{"metadata":{"generation":12,"deletionGracePeriodSeconds":30}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(withoutManagedFields([]byte(tt.in))); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// FuzzWithoutManagedFields: for any JSON text, the object decoded from
// what is left is the one decoded from the whole text, less
// metadata.managedFields — what Decode makes of a lean object either way.
func FuzzWithoutManagedFields(f *testing.F) {
	for _, seed := range []string{
		`{"metadata":{"name":"a","managedFields":[{"manager":"helm"}]},"data":{"k":"v"}}`,
		`{"metadata":{"managedFields":[],"name":"a"},"metadata":{"uid":"u"}}`,
		`{"metadata":{"managedFields":1,"managedFields":2}}`,
		`{"a":"\u0022","metadata":{"labels":{"managedFields":"x"},"managedFields":{"x":[[],{}]}}}`,
		`{}`, `[]`, `"x"`, `{"metadata":null}`,
	} {
		f.Add([]byte(seed))
	}
	lean := func(b []byte) (map[string]interface{}, error) {
		var m map[string]interface{}
		if err := utiljson.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		if m != nil {
			unstructured.RemoveNestedField(m, "metadata", "managedFields")
		}
		return m, nil
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return // pages are decoded before their items are cut: items are valid
		}
		want, wantErr := lean(in)
		got, gotErr := lean(withoutManagedFields(in))
		if (wantErr == nil) != (gotErr == nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s\n cut: %s\n got %v (%v)\nwant %v (%v)", in, withoutManagedFields(in), got, gotErr, want, wantErr)
		}
	})
}
