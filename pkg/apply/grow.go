package apply

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
)

// grownTemplates returns, for a recreated StatefulSet, the storage request
// of each claim template the planned StatefulSet asks more storage of than
// the live one did (template name → new request). A template's claims
// created before the recreate keep their old request unless grown.
func grownTemplates(t *recreateTarget) map[string]resource.Quantity {
	if t.live == nil || t.id.Group != "apps" || t.id.Kind != "StatefulSet" {
		return nil
	}
	old := templateRequests(t.live)
	out := map[string]resource.Quantity{}
	for name, q := range templateRequests(t.planned.Obj) {
		if was, ok := old[name]; ok && q.Cmp(was) > 0 {
			out[name] = q
		}
	}
	return out
}

func templateRequests(sts *unstructured.Unstructured) map[string]resource.Quantity {
	items, _, _ := unstructured.NestedSlice(sts.Object, "spec", "volumeClaimTemplates")
	out := map[string]resource.Quantity{}
	for _, it := range items {
		m, ok := it.(map[string]interface{})
		if !ok {
			continue
		}
		name, _, _ := unstructured.NestedString(m, "metadata", "name")
		s, _, _ := unstructured.NestedFieldNoCopy(m, "spec", "resources", "requests", "storage")
		if q, err := resource.ParseQuantity(fmt.Sprint(s)); err == nil && name != "" {
			out[name] = q
		}
	}
	return out
}

// grow asks, after the upgrade re-created each StatefulSet whose claim
// templates request more storage, the same of every existing claim of those
// templates: it patches spec.resources.requests.storage when the claim is
// bound and its StorageClass allows volume expansion, and otherwise says why
// the claim keeps its size. One line per claim goes to r.out; nothing here
// fails the apply (the revision is deployed).
func (r *recreator) grow(ctx context.Context, targets []*recreateTarget) {
	for _, t := range targets {
		grown := grownTemplates(t)
		if len(grown) == 0 {
			continue
		}
		templates := slices.Sorted(maps.Keys(grown))
		pvcs, err := r.cluster.Claims(ctx, t.live.GetNamespace(), func(name string) bool {
			_, ok := live.ClaimTemplate(name, t.live.GetName(), templates)
			return ok
		})
		if err != nil {
			fmt.Fprintf(r.out, "%s: its claims were not grown: listing them: %v\n", t.id, err)
			continue
		}
		for i := range pvcs {
			pvc := &pvcs[i]
			tmpl, _ := live.ClaimTemplate(pvc.GetName(), t.live.GetName(), templates)
			fmt.Fprintf(r.out, "PersistentVolumeClaim/%s/%s: %s\n", pvc.GetNamespace(), pvc.GetName(), r.growClaim(ctx, pvc, grown[tmpl]))
		}
	}
}

// growClaim grows one claim to want and says what happened.
func (r *recreator) growClaim(ctx context.Context, pvc *unstructured.Unstructured, want resource.Quantity) string {
	raw, _, _ := unstructured.NestedFieldNoCopy(pvc.Object, "spec", "resources", "requests", "storage")
	have, err := resource.ParseQuantity(fmt.Sprint(raw))
	if err == nil && have.Cmp(want) >= 0 {
		return fmt.Sprintf("already requests %s", have.String())
	}
	keeps := fmt.Sprintf("keeps %s, not grown to %s: ", have.String(), want.String())
	if phase, _, _ := unstructured.NestedString(pvc.Object, "status", "phase"); phase != "Bound" {
		return keeps + fmt.Sprintf("it is %s, not Bound (the API server resizes bound claims only)", phaseOr(phase))
	}
	class, _, _ := unstructured.NestedString(pvc.Object, "spec", "storageClassName")
	if class == "" {
		return keeps + "it has no StorageClass, so expansion is not allowed"
	}
	sc, err := r.cluster.StorageClass(ctx, class)
	if err != nil {
		return keeps + fmt.Sprintf("reading its StorageClass %s: %v", class, err)
	}
	if ok, _, _ := unstructured.NestedBool(sc.Object, "allowVolumeExpansion"); !ok {
		return keeps + fmt.Sprintf("its StorageClass %s does not allow volume expansion (allowVolumeExpansion is not true)", class)
	}
	patch := fmt.Sprintf(`{"spec":{"resources":{"requests":{"storage":%q}}}}`, want.String())
	_, err = r.cluster.Dynamic.Resource(live.ClaimsGVR).Namespace(pvc.GetNamespace()).Patch(ctx, pvc.GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return keeps + fmt.Sprintf("the API server refused the resize: %v", err)
	}
	return fmt.Sprintf("request grown from %s to %s (StorageClass %s allows expansion; the volume's resize follows)", have.String(), want.String(), class)
}

func phaseOr(p string) string {
	if p == "" {
		return "not bound yet"
	}
	return p
}
