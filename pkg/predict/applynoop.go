package predict

import (
	"maps"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// ApplyNoopByFieldSets reports whether Helm 4's server-side apply of config
// (manager FieldManager, not forced) onto liveObj changes nothing, shown
// with structured-merge-diff's typed values and field sets alone, without
// the field manager's whole pipeline (DecideApply), which costs several
// times more and is what made a Helm 4 plan slower than a Helm 3 one:
//
//   - helm's fields are one Apply entry of config's version and equal the
//     field set config records (what the server would record for helm
//     now), so the apply releases and prunes nothing;
//   - every manager's entry is of that version, readable, not empty, and
//     the server's schema reconciliation leaves it as it is;
//   - no other manager owns a field config sets (a shared field is left to
//     DecideApply, which asks);
//   - merging config into the live object (for a Secret, config as stored:
//     stringData folded into data) gives the live object back.
//
// These are the steps of structured-merge-diff's Updater.Apply, each shown
// to change nothing; with nothing changed the field manager's update finds
// no conflict and leaves every entry as it is. false means only "not
// shown": DecideApply then runs the full merge.
func ApplyNoopByFieldSets(tc managedfields.TypeConverter, liveObj, config *unstructured.Unstructured) bool {
	return applyNoop(tc, liveObj, config, liveObj.GetManagedFields())
}

// applyNoop is ApplyNoopByFieldSets with liveObj's managed fields decoded
// (entries) by the caller.
func applyNoop(tc managedfields.TypeConverter, liveObj, config *unstructured.Unstructured, entries []metav1.ManagedFieldsEntry) bool {
	gvk := config.GroupVersionKind()
	version := gvk.GroupVersion().String()
	if tc == nil || len(entries) == 0 || liveObj.GroupVersionKind() != gvk {
		return false
	}
	cfg, err := tc.ObjectToTyped(config)
	if err != nil {
		return false
	}
	set, err := cfg.ToFieldSet()
	if err != nil {
		return false
	}
	set = set.Difference(unmanagedFields())
	live, err := tc.ObjectToTyped(withoutManagedFields(liveObj), typed.AllowDuplicates)
	if err != nil {
		return false
	}
	helm := 0
	for _, e := range entries {
		if e.APIVersion != version {
			return false
		}
		owned, err := fieldSet(e)
		if err != nil || owned.Empty() {
			return false
		}
		if reconciled, err := typed.ReconcileFieldSetWithSchema(owned, live); err != nil || reconciled != nil {
			return false
		}
		if e.Manager != FieldManager {
			if !owned.Intersection(set).Empty() {
				return false
			}
			continue
		}
		helm++
		if e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "" || !owned.Equals(set) {
			return false
		}
	}
	if helm != 1 {
		return false
	}
	if gvk == (schema.GroupVersionKind{Version: "v1", Kind: "Secret"}) {
		stored := config.DeepCopy()
		storedForm(stored)
		if cfg, err = tc.ObjectToTyped(stored); err != nil {
			return false
		}
	}
	merged, err := live.Merge(cfg)
	if err != nil {
		return false
	}
	return value.EqualsUsing(value.NewFreelistAllocator(), live.AsValue(), merged.AsValue())
}

// unmanagedFields are the fields the API server's field manager never
// records for a manager (k8s.io/apimachinery's managedfields
// stripMetaManager): a configuration's field set is compared with helm's
// recorded one without them. Built once, never changed.
var unmanagedFields = sync.OnceValue(func() *fieldpath.Set {
	return fieldpath.NewSet(
		fieldpath.MakePathOrDie("apiVersion"),
		fieldpath.MakePathOrDie("kind"),
		fieldpath.MakePathOrDie("metadata"),
		fieldpath.MakePathOrDie("metadata", "name"),
		fieldpath.MakePathOrDie("metadata", "namespace"),
		fieldpath.MakePathOrDie("metadata", "creationTimestamp"),
		fieldpath.MakePathOrDie("metadata", "selfLink"),
		fieldpath.MakePathOrDie("metadata", "uid"),
		fieldpath.MakePathOrDie("metadata", "clusterName"),
		fieldpath.MakePathOrDie("metadata", "generation"),
		fieldpath.MakePathOrDie("metadata", "managedFields"),
		fieldpath.MakePathOrDie("metadata", "resourceVersion"),
	)
})

// withoutManagedFields is obj without metadata.managedFields, which the
// field manager takes off before it types the live object; shallow copies,
// obj is not changed.
func withoutManagedFields(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := maps.Clone(obj.Object)
	if meta, ok := out["metadata"].(map[string]interface{}); ok {
		meta = maps.Clone(meta)
		delete(meta, "managedFields")
		out["metadata"] = meta
	}
	return &unstructured.Unstructured{Object: out}
}
