// Package redact hides secret values before an object reaches any later
// stage, so no output format, log or error can carry them. Values are
// replaced by a marker keyed per plan (see Masker): a change is still
// visible, and equal values compare equal within one plan, without
// revealing the value or anything that helps guess it.
//
// The values an object holds are not the only way out: the Sanitizer
// (sanitizer.go) removes known values from any text, the SecretReads
// transport (reads.go) feeds it the Secrets a run reads from the API
// server, and Warnings (warnings.go) prints the server's warnings through
// it.
package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// LastAppliedAnnotation is kubectl's copy of the whole object, Secrets' data
// included.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// plainData are the kinds whose top-level data is known not to be secret.
// Every other object that carries data or stringData is masked: a kind the
// tool cannot resolve for sure (`kind: configmap`, a ConfigMap of another
// group or version, a custom resource) may be a Secret in disguise, and
// showing too little is safe where showing too much is not.
var plainData = map[schema.GroupVersionKind]bool{
	{Version: "v1", Kind: "ConfigMap"}: true,
}

// secretFields are the fields masked in sensitive objects.
var secretFields = []string{"data", "stringData"}

// secretKnownFields are the top-level fields of a Secret that hold no
// value. Any other (a misspelled `strinData`, which the API server drops
// with only a warning) is masked like data: the chart meant a value there.
var secretKnownFields = map[string]bool{"apiVersion": true, "kind": true, "metadata": true, "type": true, "immutable": true}

// maskedFields are the fields of a Sensitive obj whose values are masked:
// data and stringData, and for a Secret every top-level field that is not
// secretKnownFields.
func maskedFields(obj *unstructured.Unstructured) []string {
	if !IsSecret(obj) {
		return secretFields
	}
	var out []string
	for k := range obj.Object {
		if !secretKnownFields[k] {
			out = append(out, k)
		}
	}
	return out
}

// IsSecret reports whether obj is a Secret: its kind is "Secret" in any
// case, whatever its apiVersion. The API server's discovery maps the
// lower-case kind too, and Helm sends such objects as they are.
func IsSecret(obj *unstructured.Unstructured) bool {
	return obj != nil && strings.EqualFold(obj.GetKind(), "Secret")
}

// MayHoldSecrets reports whether an object of apiVersion and kind, encoded
// as data (JSON), may hold a value Sensitive or the sanitiser would find:
// false only when decoding it could not add any (a core ConfigMap without
// kubectl's last-applied copy, an object with neither data nor stringData).
// It lets a caller decode only those objects ahead of the others.
func MayHoldSecrets(apiVersion, kind string, data []byte) bool {
	switch {
	case strings.EqualFold(kind, "Secret"), bytes.Contains(data, []byte(LastAppliedAnnotation)):
		return true
	case plainData[schema.FromAPIVersionAndKind(apiVersion, kind)]:
		return false
	}
	return bytes.Contains(data, []byte(`"stringData"`)) || bytes.Contains(data, []byte(`"data"`))
}

// Sensitive reports whether obj's data and stringData are masked: a Secret
// (IsSecret), or any object carrying data or stringData other than a core
// v1 ConfigMap's data. It fails closed: what cannot be told apart from a
// Secret is treated as one.
func Sensitive(obj *unstructured.Unstructured) bool {
	if obj == nil {
		return false
	}
	if IsSecret(obj) {
		return true
	}
	if _, ok := obj.Object["stringData"]; ok {
		return true
	}
	_, ok := obj.Object["data"]
	return ok && !plainData[obj.GroupVersionKind()]
}

// Object returns obj with the values of a Sensitive object's data and
// stringData and any last-applied-configuration annotation masked by m: a
// masked copy when there is something to hide, else obj itself (callers
// must not modify it). data values of a Secret are masked after base64
// decoding, so the same value given as data or stringData masks alike.
// Values already masked stay as they are. nil stays nil.
func (m *Masker) Object(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	sensitive := Sensitive(obj)
	if !sensitive {
		if _, ok := obj.GetAnnotations()[LastAppliedAnnotation]; !ok {
			return obj // nothing to hide: no copy
		}
	}
	out := obj.DeepCopy()
	if ann := out.GetAnnotations(); ann != nil {
		if v, ok := ann[LastAppliedAnnotation]; ok && !IsMasked(v) {
			ann[LastAppliedAnnotation] = m.Value([]byte(v))
			out.SetAnnotations(ann)
		}
	}
	if !sensitive {
		return out
	}
	for _, field := range maskedFields(out) {
		if v, ok := out.Object[field]; ok {
			out.Object[field] = m.maskField(v, field == "data")
		}
	}
	return out
}

// maskField masks the value of a data or stringData field: each value of a map,
// or the whole field when it is not a map (a malformed manifest is masked,
// not printed).
func (m *Masker) maskField(v interface{}, base64Data bool) interface{} {
	values, ok := v.(map[string]interface{})
	if !ok {
		if v == nil {
			return nil
		}
		return m.value(v, false)
	}
	for k, x := range values {
		values[k] = m.value(x, base64Data)
	}
	return values
}

// value masks one value unless it is masked already; base64Data values are
// decoded first when they are valid base64.
func (m *Masker) value(v interface{}, base64Data bool) interface{} {
	s, isString := v.(string)
	switch {
	case isString && IsMasked(s):
		return s
	case isString && base64Data:
		if raw, err := base64.StdEncoding.DecodeString(s); err == nil {
			return m.Value(raw)
		}
		return m.Value([]byte(s))
	case isString:
		return m.Value([]byte(s))
	}
	data, err := json.Marshal(v)
	if err != nil {
		data = []byte(fmt.Sprint(v))
	}
	return m.Value(data)
}
