package predict

import (
	"encoding/base64"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// metaScope is which top-level metadata maps of a kind the API server's own
// code (validation, defaulting, update strategy, warnings, built-in
// admission) does nothing with but store them.
type metaScope int

const (
	labelsOnly metaScope = iota + 1
	labelsAndAnnotations
)

// derivable are the built-in kinds whose metadata-only patch Derive
// predicts, and how far; docs/performance.md gives the evidence per kind.
// Of spec, Derive predicts a ClusterIP Service's ports (patchServicePorts)
// and a Deployment's container images (patchImages) only.
// Left out on purpose: Namespace (the server forces a label and PodSecurity
// reads them), Pod and Node (annotation validation, NodeRestriction),
// PersistentVolumeClaim (the storage-class annotation is immutable), RBAC
// kinds (every update re-checks privilege escalation), StatefulSet, CronJob
// and NetworkPolicy (every update returns warnings about the whole object).
// Annotations are left out where the server validates or warns about some
// (Service, ServiceAccount) or where they bump metadata.generation and with
// it the pod template warnings (Deployment).
var derivable = map[schema.GroupKind]metaScope{
	{Kind: "ConfigMap"}:                                     labelsAndAnnotations,
	{Kind: "Secret"}:                                        labelsAndAnnotations, // Opaque only, see Derive
	{Kind: "Service"}:                                       labelsOnly,
	{Kind: "ServiceAccount"}:                                labelsOnly,
	{Group: "apps", Kind: "Deployment"}:                     labelsOnly,
	{Group: "apps", Kind: "DaemonSet"}:                      labelsOnly,
	{Group: "batch", Kind: "Job"}:                           labelsOnly,
	{Group: "policy", Kind: "PodDisruptionBudget"}:          labelsAndAnnotations,
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}: labelsAndAnnotations,
	{Group: "networking.k8s.io", Kind: "Ingress"}:           labelsAndAnnotations,
}

// payloads are the kinds whose payload Derive predicts too: each payload
// field, and whether its values are base64 (bytes). A Secret's stringData
// is folded into its data, as the API server decodes it.
var payloads = map[schema.GroupKind]map[string]bool{
	{Kind: "ConfigMap"}: {"data": false, "binaryData": true},
	{Kind: "Secret"}:    {"data": true}, // Opaque only, see Derive
}

// Derive returns the object the API server would store for Helm's
// client-side patch of live — without asking it — when the patch changes
// nothing but top-level metadata labels (and, for some kinds, annotations)
// of a kind in derivable and, for a ConfigMap or an Opaque Secret, its
// payload (data, binaryData, a Secret's stringData), for a ClusterIP Service
// its ports, for a Deployment its containers' images, to values the
// server's validation accepts (apimachinery's ObjectMeta validation;
// payload keys, the 1 MiB payload limit, a ConfigMap key in both data and
// binaryData; the Service port rules; a set image) and, for an image, a
// pod template the server's warnings say nothing about.
// Otherwise it returns nil and why the server must be asked: a patch the
// server would refuse is asked about, so the report carries its own answer.
//
// Derive judges the request only; who else may see it (admission webhooks
// and policies, the authorizer) is the caller's to rule out.
func Derive(live *unstructured.Unstructured, patch []byte, pt types.PatchType) (*unstructured.Unstructured, string) {
	if pt != types.StrategicMergePatchType {
		return nil, "not a strategic merge patch"
	}
	var p map[string]interface{}
	// Decoded as the API server decodes a patch: integers stay integers,
	// which the strategic merge of spec.ports compares by value.
	if err := kjson.UnmarshalCaseSensitivePreserveInts(patch, &p); err != nil {
		return nil, "patch unreadable"
	}
	return derive(live, p, specPatched)
}

// derive is Derive of the patch p; ports says how a change of spec is
// given (Helm 3's patch, or the merge patch to Helm 4's merged object).
func derive(live *unstructured.Unstructured, p map[string]interface{}, ports specChange) (*unstructured.Unstructured, string) {
	gk := live.GroupVersionKind().GroupKind()
	scope, ok := derivable[gk]
	switch {
	case !ok:
		return nil, "kind " + gk.String() + " is not derived"
	case deleting(live):
		return nil, "being deleted"
	}
	if gk.Kind == "Secret" {
		if t, _, _ := unstructured.NestedString(live.Object, "type"); t != "" && t != "Opaque" {
			return nil, "Secret of type " + t // validated and warned about per type
		}
	}
	out := live.DeepCopy()
	content := map[string]interface{}{}
	var spec interface{}
	for key, v := range p {
		_, isPayload := payloads[gk][key]
		switch {
		case key == "spec" && (gk == serviceKind || imageKinds[gk] != nil):
			spec = v
		case key == "metadata":
			m, ok := v.(map[string]interface{})
			if !ok {
				return nil, "metadata is not a map"
			}
			if why := patchMetadata(out, m, scope); why != "" {
				return nil, why
			}
		case isPayload:
			content[key] = v
		case key == "stringData" && gk.Kind == "Secret":
			content[key] = v
		default:
			return nil, "patch sets " + key
		}
	}
	if sd, ok := content["stringData"]; ok {
		if _, data := content["data"]; !data && sameData(live, sd) == "" {
			// Folds into the data live holds: nothing changes.
			delete(content, "stringData")
		}
	}
	if len(content) > 0 {
		if immutable, _, _ := unstructured.NestedBool(live.Object, "immutable"); immutable {
			return nil, "immutable " + gk.Kind // the server refuses payload changes
		}
		if why := patchPayload(out, payloads[gk], content); why != "" {
			return nil, why
		}
	}
	if spec != nil {
		why := ""
		if gk == serviceKind {
			why = patchServicePorts(out.Object, spec, ports)
		} else {
			why = patchImages(out.Object, spec, ports, imageKinds[gk])
		}
		if why != "" {
			return nil, why
		}
	}
	if why := validMetadata(out); why != "" {
		return nil, why
	}
	return out, ""
}

// deleting reports whether obj has a deletion timestamp: whatever its value,
// the server treats such updates apart (finalizers only shrink).
func deleting(obj *unstructured.Unstructured) bool {
	_, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "deletionTimestamp")
	return found
}

// patchMetadata applies a patch's metadata to obj, as a strategic merge
// patch does to maps of strings: a key set, or removed by null.
func patchMetadata(obj *unstructured.Unstructured, m map[string]interface{}, scope metaScope) string {
	for field, v := range m {
		switch {
		case field == "labels":
		case field == "annotations" && scope == labelsAndAnnotations:
		default:
			return "patch sets metadata." + field
		}
		changes, ok := v.(map[string]interface{})
		if !ok {
			return "metadata." + field + " is not a map"
		}
		current, _, _ := unstructured.NestedStringMap(obj.Object, "metadata", field)
		next := maps.Clone(current)
		if next == nil {
			next = map[string]string{}
		}
		if why := mergeStrings(next, changes, "metadata."+field, nil); why != "" {
			return why
		}
		if len(next) == 0 {
			// The server stores no empty map.
			unstructured.RemoveNestedField(obj.Object, "metadata", field)
			continue
		}
		_ = unstructured.SetNestedStringMap(obj.Object, next, "metadata", field)
	}
	return ""
}

// sameData reports "" when a Secret patch's stringData folds into exactly the
// data live holds: the server would store the same data.
func sameData(live *unstructured.Unstructured, v interface{}) string {
	sd, ok := v.(map[string]interface{})
	if !ok {
		return "stringData is not a map"
	}
	data, _, _ := unstructured.NestedMap(live.Object, "data")
	for k, val := range sd {
		s, ok := val.(string)
		if !ok {
			return "stringData changes" // null or not a string: the server decides
		}
		if have, _ := data[k].(string); have != base64.StdEncoding.EncodeToString([]byte(s)) {
			return "stringData changes"
		}
	}
	return ""
}

// validMetadata validates obj's labels and annotations as the API server's
// ObjectMeta validation does (key and value syntax, total annotation size).
func validMetadata(obj *unstructured.Unstructured) string {
	errs := metav1validation.ValidateLabels(obj.GetLabels(), field.NewPath("metadata", "labels"))
	errs = append(errs, apimachineryvalidation.ValidateAnnotations(obj.GetAnnotations(), field.NewPath("metadata", "annotations"))...)
	if len(errs) > 0 {
		return "labels or annotations the server refuses"
	}
	return ""
}

// patchPayload applies a patch's payload fields (content) to obj as the API
// server does: a strategic merge patch sets or removes (null) each key of a
// map of strings; base64 values are decoded as the server's JSON decoder
// does (line breaks ignored, padding required) and stored re-encoded; a
// Secret's stringData then overwrites data, encoded. It then validates the
// payload as the server's ConfigMap and Secret validation does. Anything
// else (a field removed whole, a patch directive, a value not a string)
// returns why the server must be asked.
func patchPayload(obj *unstructured.Unstructured, fields map[string]bool, content map[string]interface{}) string {
	for field, isBytes := range fields {
		v, ok := content[field]
		if !ok {
			continue
		}
		changes, ok := v.(map[string]interface{})
		if !ok {
			return field + " is not a map"
		}
		next, why := stringMap(obj.Object, field)
		if why != "" {
			return why
		}
		var stored func(string) (string, string)
		if isBytes {
			stored = func(s string) (string, string) {
				raw, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					return "", field + " not base64" // the server refuses it
				}
				return base64.StdEncoding.EncodeToString(raw), ""
			}
		}
		if why := mergeStrings(next, changes, field, stored); why != "" {
			return why
		}
		setStringMap(obj.Object, field, next)
	}
	if v, ok := content["stringData"]; ok {
		sd, ok := v.(map[string]interface{})
		if !ok {
			return "stringData is not a map"
		}
		data, why := stringMap(obj.Object, "data")
		if why != "" {
			return why
		}
		for k, val := range sd {
			s, ok := val.(string)
			if !ok {
				return "stringData[" + k + "] is not a string" // null: the server decides
			}
			data[k] = base64.StdEncoding.EncodeToString([]byte(s))
		}
		setStringMap(obj.Object, "data", data)
	}
	return validPayload(obj, fields)
}

// mergeStrings applies changes, a strategic merge patch of the map of
// strings at path, to next: each key set, or removed by null. stored, when
// not nil, turns a patch value into the value the server stores, or says
// why the server must be asked. Anything else (a patch directive, a value
// not a string) returns why the server must be asked.
func mergeStrings(next map[string]string, changes map[string]interface{}, path string, stored func(string) (string, string)) string {
	for k, val := range changes {
		if strings.HasPrefix(k, "$") {
			return "patch directive " + k + " in " + path
		}
		switch s := val.(type) {
		case nil:
			delete(next, k)
		case string:
			if stored != nil {
				var why string
				if s, why = stored(s); why != "" {
					return why
				}
			}
			next[k] = s
		default:
			return fmt.Sprintf("%s[%s] is not a string", path, k)
		}
	}
	return ""
}

// stringMap returns a copy of obj's map of strings at field (empty when
// unset).
func stringMap(obj map[string]interface{}, field string) (map[string]string, string) {
	out := map[string]string{}
	v, ok := obj[field]
	if !ok || v == nil {
		return out, ""
	}
	m, ok := v.(map[string]interface{})
	if !ok {
		return nil, "live " + field + " is not a map"
	}
	for k, val := range m {
		s, ok := val.(string)
		if !ok {
			return nil, "live " + field + " holds a value not a string"
		}
		out[k] = s
	}
	return out, ""
}

// setStringMap sets obj's field to m; the server stores no empty map.
func setStringMap(obj map[string]interface{}, field string, m map[string]string) {
	if len(m) == 0 {
		delete(obj, field)
		return
	}
	out := make(map[string]interface{}, len(m))
	for k, v := range m {
		out[k] = v
	}
	obj[field] = out
}

// validPayload validates obj's payload as the API server's ValidateConfigMap
// and ValidateSecret do (k8s.io/kubernetes pkg/apis/core/validation): every
// key a valid ConfigMap key, no ConfigMap key in both data and binaryData,
// at most corev1.MaxSecretSize bytes in all (decoded base64). Type-specific
// rules of Secrets do not apply: only Opaque Secrets are derived.
func validPayload(obj *unstructured.Unstructured, fields map[string]bool) string {
	size := 0
	seen := map[string]bool{}
	for field, isBytes := range fields {
		m, why := stringMap(obj.Object, field)
		if why != "" {
			return why
		}
		for k, v := range m {
			if len(validation.IsConfigMapKey(k)) > 0 {
				return "a " + field + " key the server refuses"
			}
			if seen[k] {
				return "a key in both data and binaryData"
			}
			seen[k] = true
			if !isBytes {
				size += len(v)
				continue
			}
			raw, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				return "live " + field + " not base64"
			}
			size += len(raw)
		}
	}
	if size > corev1.MaxSecretSize {
		return "payload over 1 MiB"
	}
	return ""
}
