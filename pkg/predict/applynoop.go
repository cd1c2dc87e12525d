package predict

import (
	"maps"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// ApplyNoopByFieldSets reports whether Helm 4's server-side apply of config
// (manager FieldManager, not forced) onto liveObj changes nothing, shown
// with structured-merge-diff's typed values and field sets alone, without
// the field manager's whole pipeline (DecideApply), which costs several
// times more and is what made a Helm 4 plan slower than a Helm 3 one. It is
// ApplyByFieldSets' no-op; false means only "not shown".
func ApplyNoopByFieldSets(tc managedfields.TypeConverter, liveObj, config *unstructured.Unstructured) bool {
	return ApplyByFieldSets(tc, liveObj, config).Verdict == ApplyNoop
}

// ApplyByFieldSets decides Helm 4's server-side apply of config (manager
// FieldManager, not forced) onto liveObj where it can be shown from
// structured-merge-diff's typed values and field sets, without the field
// manager's pipeline: ApplyNoop, or ApplyChange with the merged object;
// ApplyAsk means only "not shown", and DecideApply then runs the full
// merge. It shows them where
//
//   - helm's fields are one Apply entry of config's version and equal the
//     field set config records (what the server would record for helm
//     now), so the apply releases and prunes nothing;
//   - every manager's entry is of that version, readable, not empty, and
//     the server's schema reconciliation leaves it as it is;
//   - no other manager owns a field config sets (a shared field is left to
//     DecideApply, which asks);
//   - a no-op: merging config into the live object (for a Secret, config
//     as stored: stringData folded into data) gives the live object back;
//   - a change: the merge changes, adds and removes no field another
//     manager owns, and removes none at all.
//
// These are the steps of structured-merge-diff's Updater.Apply, which the
// API server's field manager runs (merge.Updater in sigs.k8s.io/
// structured-merge-diff/v6), each shown to leave the managed fields as
// they are:
//
//  1. reconcileManagedFieldsWithSchemaChanges: every set reconciles to
//     nil, so the managers are the ones read.
//  2. Merge: live.Merge(config), the merged object computed here.
//  3. helm's new set is config's field set; the field manager strips from
//     it the fields it never records (unmanagedFields), which gives the set
//     recorded, unchanged.
//  4. prune removes only fields of helm's last set that no manager, helm's
//     new set included, owns; helm's last set is its new one less the
//     stripped fields, so there are none, and the merged object is kept.
//  5. update: a manager loses the fields the comparison of the live object
//     with the merged one finds removed, and a manager other than helm
//     that owns a field found modified or added conflicts; neither happens
//     (checked, not assumed, with the same comparison).
//
// The field manager's layers around the Updater change nothing else for
// manager helm: no conversion (one version), no defaulting (the server's
// is DeriveApply's concern), the last-applied annotation is kept in step
// only for manager kubectl, the Update managers are capped on updates
// only; a changed object gets helm's entry a new time, which no decision
// reads. So the object the full pipeline returns is the merged one, as
// stored (storedForm), with these managed fields; TestApplyByFieldSetsIsTheMerge
// compares both on the built-in schemas, and TestDecideApplyAgreesWithServer
// with the server.
func ApplyByFieldSets(tc managedfields.TypeConverter, liveObj, config *unstructured.Unstructured) ApplyDecision {
	return applyByFieldSets(tc, liveObj, config, liveObj.GetManagedFields())
}

// notShown is ApplyByFieldSets' "not shown".
var notShown = ApplyDecision{Verdict: ApplyAsk, Why: "not shown from field sets"}

// applyByFieldSets is ApplyByFieldSets with liveObj's managed fields
// decoded (entries) by the caller.
func applyByFieldSets(tc managedfields.TypeConverter, liveObj, config *unstructured.Unstructured, entries []metav1.ManagedFieldsEntry) ApplyDecision {
	gvk := config.GroupVersionKind()
	if tc == nil || len(entries) == 0 || liveObj.GroupVersionKind() != gvk {
		return notShown
	}
	cfg, err := tc.ObjectToTyped(config)
	if err != nil {
		return notShown
	}
	set, err := cfg.ToFieldSet()
	if err != nil {
		return notShown
	}
	set = set.Difference(unmanagedFields())
	live, err := tc.ObjectToTyped(withoutManagedFields(liveObj), typed.AllowDuplicates)
	if err != nil {
		return notShown
	}
	others, ok := othersByFieldSets(entries, gvk.GroupVersion().String(), set, live)
	if !ok {
		return notShown
	}
	stored := cfg
	if gvk == secretV1 {
		s := config.DeepCopy()
		storedForm(s)
		if stored, err = tc.ObjectToTyped(s); err != nil {
			return notShown
		}
	}
	// Merging config as stored gives what the server stores: a Secret's
	// stringData folded into data after the merge (DecideApply) or before
	// it is the same, each key of stringData overwriting data's.
	merged, err := live.Merge(stored)
	if err != nil {
		return notShown
	}
	if value.EqualsUsing(value.NewFreelistAllocator(), live.AsValue(), merged.AsValue()) {
		return ApplyDecision{Verdict: ApplyNoop}
	}
	// The field manager merges config as sent (a Secret's stringData as
	// such), and compares that with the live object.
	if stored != cfg {
		if merged, err = live.Merge(cfg); err != nil {
			return notShown
		}
	}
	return changeByFieldSets(live, merged, others, entries)
}

// changeByFieldSets is ApplyByFieldSets' change: merged, config merged into
// live as the field manager merges it, when the merge changes, adds and
// removes no field another manager owns (others), and removes none at all;
// the merged object as stored carries the managed fields entries, helm's
// with a new time.
func changeByFieldSets(live, merged *typed.TypedValue, others []*fieldpath.Set, entries []metav1.ManagedFieldsEntry) ApplyDecision {
	cmp, err := live.Compare(merged)
	if err != nil || !cmp.Removed.Empty() {
		return notShown
	}
	touched := cmp.Modified.Union(cmp.Added)
	for _, owned := range others {
		if !owned.Intersection(touched).Empty() {
			return notShown
		}
	}
	obj, ok := merged.AsValue().Unstructured().(map[string]interface{})
	if !ok {
		return notShown
	}
	out := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
	storedForm(out)
	managed := slices.Clone(entries)
	now := metav1.Now()
	for i := range managed {
		if managed[i].Manager == FieldManager {
			managed[i].Time = &now
		}
	}
	out.SetManagedFields(managed)
	return ApplyDecision{Verdict: ApplyChange, Merged: out}
}

// othersByFieldSets returns the field sets of the managers other than helm
// in entries, when each entry is of version, readable, not empty and left
// as it is by the server's schema reconciliation with live, helm's is one
// Apply entry equal to set (config's), and no other manager owns a field of
// set; ok false otherwise.
func othersByFieldSets(entries []metav1.ManagedFieldsEntry, version string, set *fieldpath.Set, live *typed.TypedValue) (others []*fieldpath.Set, ok bool) {
	helm := 0
	for _, e := range entries {
		if e.APIVersion != version {
			return nil, false
		}
		owned, err := fieldSet(e)
		if err != nil || owned.Empty() {
			return nil, false
		}
		if reconciled, err := typed.ReconcileFieldSetWithSchema(owned, live); err != nil || reconciled != nil {
			return nil, false
		}
		if e.Manager != FieldManager {
			if !owned.Intersection(set).Empty() {
				return nil, false
			}
			others = append(others, owned)
			continue
		}
		helm++
		if e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "" || !owned.Equals(set) {
			return nil, false
		}
	}
	if helm != 1 {
		return nil, false
	}
	return others, true
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
