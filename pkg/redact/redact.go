// Package redact hides secret values before an object reaches any later
// stage, so no output format, log or error can carry them. Values are
// replaced by their size and a short hash: a change is still visible (and can
// be matched against the cluster after apply) without revealing the value.
package redact

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// LastAppliedAnnotation is kubectl's copy of the whole object, Secrets' data
// included.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// maskedPrefix starts every masked value; masking is idempotent.
const maskedPrefix = "(sensitive: "

// Value returns the masked form of a secret value.
func Value(raw []byte) string {
	sum := sha256.Sum256(raw)
	return fmt.Sprintf("(sensitive: %d bytes, sha256:%s)", len(raw), hex.EncodeToString(sum[:4]))
}

// IsSecret reports whether obj is a core/v1 Secret.
func IsSecret(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == "" && gvk.Kind == "Secret"
}

// Object returns obj with Secret data and stringData values and any
// last-applied-configuration annotation masked: a masked copy when there is
// something to hide, else obj itself (callers must not modify it). data
// values are hashed after base64 decoding, so the same value given as data or
// stringData masks alike. nil stays nil.
func Object(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	if !IsSecret(obj) {
		if _, ok := obj.GetAnnotations()[LastAppliedAnnotation]; !ok {
			return obj // nothing to hide: no copy
		}
	}
	out := obj.DeepCopy()
	if ann := out.GetAnnotations(); ann != nil {
		if v, ok := ann[LastAppliedAnnotation]; ok && !strings.HasPrefix(v, maskedPrefix) {
			ann[LastAppliedAnnotation] = Value([]byte(v))
			out.SetAnnotations(ann)
		}
	}
	if !IsSecret(out) {
		return out
	}
	if data, ok := out.Object["data"].(map[string]interface{}); ok {
		for k, v := range data {
			s := fmt.Sprint(v)
			if strings.HasPrefix(s, maskedPrefix) {
				continue
			}
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				raw = []byte(s)
			}
			data[k] = Value(raw)
		}
	}
	if data, ok := out.Object["stringData"].(map[string]interface{}); ok {
		for k, v := range data {
			if s := fmt.Sprint(v); !strings.HasPrefix(s, maskedPrefix) {
				data[k] = Value([]byte(s))
			}
		}
	}
	return out
}
