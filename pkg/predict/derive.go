package predict

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
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

// Derive returns the object the API server would store for Helm's
// client-side patch of live — without asking it — when the patch changes
// nothing but top-level metadata labels (and, for some kinds, annotations)
// of a kind in derivable, to values apimachinery's validation accepts. A
// Secret's stringData is allowed when it folds into exactly the data live
// holds (Helm sends it on every upgrade: live has data only). Otherwise it
// returns nil and why the server must be asked.
//
// Derive judges the request only; who else may see it (admission webhooks
// and policies, the authorizer) is the caller's to rule out.
func Derive(live *unstructured.Unstructured, patch []byte, pt types.PatchType) (*unstructured.Unstructured, string) {
	gk := live.GroupVersionKind().GroupKind()
	scope, ok := derivable[gk]
	switch {
	case !ok:
		return nil, "kind " + gk.String() + " is not derived"
	case pt != types.StrategicMergePatchType:
		return nil, "not a strategic merge patch"
	case deleting(live):
		return nil, "being deleted"
	}
	if gk.Kind == "Secret" {
		if t, _, _ := unstructured.NestedString(live.Object, "type"); t != "" && t != "Opaque" {
			return nil, "Secret of type " + t // validated and warned about per type
		}
	}
	var p map[string]interface{}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, "patch unreadable"
	}
	out := live.DeepCopy()
	for key, v := range p {
		switch {
		case key == "metadata":
			m, ok := v.(map[string]interface{})
			if !ok {
				return nil, "metadata is not a map"
			}
			if why := patchMetadata(out, m, scope); why != "" {
				return nil, why
			}
		case key == "stringData" && gk.Kind == "Secret":
			if why := sameData(live, v); why != "" {
				return nil, why
			}
		default:
			return nil, "patch sets " + key
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
		for k, val := range changes {
			if strings.HasPrefix(k, "$") {
				return "patch directive " + k + " in metadata." + field
			}
			switch s := val.(type) {
			case nil:
				delete(next, k)
			case string:
				next[k] = s
			default:
				return fmt.Sprintf("metadata.%s[%s] is not a string", field, k)
			}
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
