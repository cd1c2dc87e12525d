package predict

import (
	"encoding/base64"
	"encoding/json"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// builtin knows the Go types of the kinds compiled into Kubernetes
// (k8s.io/api), the types the API server decodes requests into. Read-only
// after construction.
var builtin = func() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	return s
}()

var typeMetaType = reflect.TypeOf(metav1.TypeMeta{})

// Builtin reports whether gvk is a kind compiled into Kubernetes (not a
// custom resource).
func Builtin(gvk schema.GroupVersionKind) bool { return builtin.Recognizes(gvk) }

// ServerForm returns obj as the API server holds it after decoding a request
// for it: for a built-in kind, the object goes through its typed Go struct
// and back, which drops unknown fields and the apiVersion/kind of embedded
// objects (a StatefulSet's volumeClaimTemplates), writes quantities in
// canonical form (1024Mi is 1Gi), keeps int-or-string values as the server
// reads them, and drops empty values of fields that cannot be told from
// unset (an empty label map, an empty string where the Go field is not a
// pointer); then the defaults the server fills in are applied (see
// setDefaults), so a field a chart sets to its default equals the same field
// left out. Comparing two server forms tells what the server would see as
// changed.
//
// Objects of other kinds (custom resources), and objects the typed struct
// cannot hold (a string where the server wants a number: the server would
// reject the request), come back as an unchanged copy. nil stays nil.
func ServerForm(obj *unstructured.Unstructured) *unstructured.Unstructured {
	return serverForm(obj, true)
}

// Decoded is ServerForm without the server's defaults: what the decoder
// alone makes of obj.
func Decoded(obj *unstructured.Unstructured) *unstructured.Unstructured {
	return serverForm(obj, false)
}

func serverForm(obj *unstructured.Unstructured, defaults bool) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	gvk := obj.GroupVersionKind()
	typed, err := builtin.New(gvk)
	if err != nil {
		return obj.DeepCopy()
	}
	in, payload := obj.Object, map[string]interface{}(nil)
	if gvk.Group == "" && gvk.Kind == "Secret" {
		in, payload = SecretPayload(obj.Object)
	}
	data, err := json.Marshal(in)
	if err != nil {
		return obj.DeepCopy()
	}
	// The server's decoder: case-sensitive keys, unknown fields ignored.
	if err := utiljson.Unmarshal(data, typed); err != nil {
		return obj.DeepCopy()
	}
	clearEmbeddedTypeMeta(reflect.ValueOf(typed), 0)
	if defaults {
		setDefaults(typed)
	}
	data, err = json.Marshal(typed)
	if err != nil {
		return obj.DeepCopy()
	}
	out := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal(data, &out.Object); err != nil {
		return obj.DeepCopy()
	}
	out.SetGroupVersionKind(gvk)
	if len(payload) > 0 {
		out.Object["data"] = payload
	}
	return out
}

// SecretPayload splits a Secret into the object without its payload and the
// payload as the server stores it: stringData folded into data (stringData
// wins). The values stay as they are: they may be masked (pkg/redact), which
// the typed struct's []byte could not hold.
func SecretPayload(obj map[string]interface{}) (map[string]interface{}, map[string]interface{}) {
	rest := make(map[string]interface{}, len(obj))
	for k, v := range obj {
		rest[k] = v
	}
	payload := map[string]interface{}{}
	for _, field := range []string{"data", "stringData"} {
		if m, ok := obj[field].(map[string]interface{}); ok {
			for k, v := range m {
				if s, ok := v.(string); ok && field == "stringData" && !redact.IsMasked(s) {
					v = base64.StdEncoding.EncodeToString([]byte(s))
				}
				payload[k] = v
			}
		}
		delete(rest, field)
	}
	return rest, payload
}

// clearEmbeddedTypeMeta zeroes the apiVersion/kind of objects embedded in
// another one: the server converts each request to its internal form, which
// has no place for them, so they never reach storage.
func clearEmbeddedTypeMeta(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			clearEmbeddedTypeMeta(v.Elem(), depth)
		}
	case reflect.Struct:
		if v.Type() == typeMetaType {
			if depth > 1 && v.CanSet() {
				v.Set(reflect.Zero(typeMetaType))
			}
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.CanSet() {
				clearEmbeddedTypeMeta(f, depth+1)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return // bytes: a Secret's data
		}
		for i := 0; i < v.Len(); i++ {
			clearEmbeddedTypeMeta(v.Index(i), depth+1)
		}
	}
}

// UnknownFields returns the warnings the API server gives for the fields of
// obj, a built-in kind, that its Go type does not have (a misspelled or
// misplaced field: `unknown field "spec.replica"`): the same strict JSON
// decoding, so the same words. The server drops such fields. Custom
// resources, and objects the type cannot hold at all, give none.
func UnknownFields(obj *unstructured.Unstructured) []string {
	typed, err := builtin.New(obj.GroupVersionKind())
	if err != nil {
		return nil
	}
	err = runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, typed, true)
	strict, ok := runtime.AsStrictDecodingError(err)
	if !ok {
		return nil
	}
	var out []string
	for _, e := range strict.Errors() {
		out = append(out, e.Error())
	}
	return out
}
