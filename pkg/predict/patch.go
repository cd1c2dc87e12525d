// Package predict computes what the API server will hold after the upgrade:
// the exact patch Helm sends for each object, answered by a server-side
// dry-run (defaulting and admission included) or, without a cluster, applied
// locally, with the server's decoding and defaulting emulated (ServerForm).
package predict

import (
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"
)

// Patcher builds patches exactly as Helm 3's kube client does
// (pkg/kube/client.go createPatch): a three-way strategic merge patch for
// kinds compiled into Kubernetes, a two-way JSON merge patch (last release →
// new render) for everything else, including CustomResourceDefinitions of
// apiextensions/v1beta1. It holds its own scheme: no global state is touched.
type Patcher struct {
	scheme *runtime.Scheme
}

// NewPatcher returns a Patcher knowing the built-in Kubernetes kinds.
func NewPatcher() *Patcher {
	s := runtime.NewScheme()
	// Same set as Helm's kubernetesNativeScheme.
	_ = scheme.AddToScheme(s)
	_ = apiextv1beta1.AddToScheme(s)
	_ = apiextv1.AddToScheme(s)
	return &Patcher{scheme: s}
}

// typed returns an empty typed object for gvk, or nil for kinds Helm treats
// as unstructured.
func (p *Patcher) typed(gvk schema.GroupVersionKind) runtime.Object {
	obj, err := p.scheme.New(gvk)
	if err != nil {
		return nil
	}
	if _, ok := obj.(*apiextv1beta1.CustomResourceDefinition); ok {
		return nil
	}
	return obj
}

// StrategicMerge reports whether objects of gvk are patched with a strategic
// merge patch.
func (p *Patcher) StrategicMerge(gvk schema.GroupVersionKind) bool { return p.typed(gvk) != nil }

// Patch returns the patch Helm would send to turn live into target, where
// original is the object from the last release manifest (nil when the object
// was not in it: Helm then uses the live object as the baseline).
func (p *Patcher) Patch(original, target, live *unstructured.Unstructured) ([]byte, types.PatchType, error) {
	if original == nil {
		original = live
	}
	oldData, err := marshalContent(original.Object)
	if err != nil {
		return nil, "", fmt.Errorf("serializing last release object: %w", err)
	}
	newData, err := marshalContent(target.Object)
	if err != nil {
		return nil, "", fmt.Errorf("serializing new object: %w", err)
	}
	typed := p.typed(target.GroupVersionKind())
	if typed == nil {
		patch, err := jsonpatch.CreateMergePatch(oldData, newData)
		return patch, types.MergePatchType, err
	}
	currentData, err := marshalContent(live.Object)
	if err != nil {
		return nil, "", fmt.Errorf("serializing live object: %w", err)
	}
	meta, err := strategicpatch.NewPatchMetaFromStruct(typed)
	if err != nil {
		return nil, "", fmt.Errorf("patch metadata for %s: %w", target.GroupVersionKind(), err)
	}
	patch, err := strategicpatch.CreateThreeWayMergePatch(oldData, newData, currentData, meta, true)
	return patch, types.StrategicMergePatchType, err
}

// Empty reports whether a patch changes nothing; Helm skips such objects.
func Empty(patch []byte) bool { return len(patch) == 0 || string(patch) == "{}" }

// ApplyLocal applies patch to live without a server: the prediction used when
// no dry-run can be made (offline, or RBAC forbids patch). It lacks server
// defaulting and admission.
func (p *Patcher) ApplyLocal(live *unstructured.Unstructured, patch []byte, pt types.PatchType) (*unstructured.Unstructured, error) {
	liveData, err := json.Marshal(live.Object)
	if err != nil {
		return nil, err
	}
	var out []byte
	switch pt {
	case types.StrategicMergePatchType:
		typed := p.typed(live.GroupVersionKind())
		if typed == nil {
			return nil, fmt.Errorf("no schema for %s", live.GroupVersionKind())
		}
		out, err = strategicpatch.StrategicMergePatch(liveData, patch, typed)
	default:
		out, err = jsonpatch.MergePatch(liveData, patch)
	}
	if err != nil {
		return nil, fmt.Errorf("applying patch to %s %q: %w", live.GetKind(), live.GetName(), err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(out); err != nil {
		return nil, err
	}
	return obj, nil
}
