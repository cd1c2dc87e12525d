package predict

import (
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/jsonvalue"
)

// ApplyVerdict is what a server-side apply's dry-run must answer, decided
// without sending it.
type ApplyVerdict int

const (
	// ApplyAsk: the answer can differ from anything decided locally; send
	// the dry-run.
	ApplyAsk ApplyVerdict = iota
	// ApplyNoop: the apply changes neither the object nor its managed
	// fields.
	ApplyNoop
	// ApplyConflict: the apply fails with field-manager conflicts.
	ApplyConflict
	// ApplyChange: the apply changes the object, and the field manager's
	// merge is unambiguous (helm the sole owner of the fields it sets, no
	// conflict): Merged is what it stores, before defaulting, admission
	// and validation, which the caller rules out (Derive) or asks about.
	ApplyChange
)

func (v ApplyVerdict) String() string {
	switch v {
	case ApplyNoop:
		return "no-op"
	case ApplyConflict:
		return "conflict"
	case ApplyChange:
		return "change"
	}
	return "ask the server"
}

// ApplyDecision is DecideApply's answer.
type ApplyDecision struct {
	Verdict ApplyVerdict
	// Why says why the server must be asked (ApplyAsk).
	Why string
	// Conflicts are the conflicts of ApplyConflict, as the server reports
	// them (its error is Err).
	Conflicts []Conflict
	Err       error
	// Merged is ApplyChange's object as the server would store it (a
	// Secret's stringData folded into data), its managed fields included.
	Merged *unstructured.Unstructured
}

func ask(format string, args ...interface{}) ApplyDecision {
	return ApplyDecision{Verdict: ApplyAsk, Why: fmt.Sprintf(format, args...)}
}

// DecideApply decides what the API server answers to Helm 4's server-side
// apply (field manager FieldManager, not forced) of config onto liveObj,
// using the API server's own field manager
// (k8s.io/apimachinery's managedfields over structured-merge-diff) typed
// by tc, the server's schemas. It answers ApplyAsk wherever the local
// merge might not be the server's: managed fields missing or unreadable,
// Helm's fields not one Apply entry of config's version, fields config
// sets that a subresource's manager owns or that another manager shares.
// An apply that changes the object is ApplyChange with the merged object:
// defaulting, admission and validation do not run here, so the caller
// derives a verdict from it only where they cannot differ (Derive) and
// asks otherwise; a no-op leaves nothing for them to see (the caller still
// asks where admission may see the request).
func DecideApply(tc managedfields.TypeConverter, liveObj, config *unstructured.Unstructured) ApplyDecision {
	return decideApply(tc, liveObj, config, true)
}

// decideApply is DecideApply; byFieldSets false runs the field manager's
// whole pipeline wherever DecideApply would decide, which the tests compare
// ApplyByFieldSets with.
func decideApply(tc managedfields.TypeConverter, liveObj, config *unstructured.Unstructured, byFieldSets bool) ApplyDecision {
	if tc == nil {
		return ask("no schema to type the object")
	}
	entries := liveObj.GetManagedFields()
	others, why := otherManagers(liveObj, entries, config.GroupVersionKind())
	if why != "" {
		return ApplyDecision{Verdict: ApplyAsk, Why: why}
	}
	// The common cases, an object the chart and everyone else left alone
	// and one whose fields helm alone sets changed, without the field
	// manager's pipeline.
	if byFieldSets {
		if d := applyByFieldSets(tc, liveObj, config, entries); d.Verdict != ApplyAsk {
			return d
		}
	}
	return applyByFieldManager(tc, liveObj, config, entries, others)
}

// otherManagers returns liveObj's managed-fields entries of managers other
// than helm, by manager, when the field manager's answer can be
// decided locally: helm's fields are one Apply entry of config's version
// gvk, and every other manager's entry is of that version too, so nothing
// is converted, as the server would have to. Otherwise it says why not.
func otherManagers(liveObj *unstructured.Unstructured, entries []metav1.ManagedFieldsEntry, gvk schema.GroupVersionKind) (map[string][]metav1.ManagedFieldsEntry, string) {
	if len(entries) == 0 {
		return nil, "no managed fields"
	}
	if liveObj.GroupVersionKind() != gvk {
		return nil, fmt.Sprintf("live object of %s, applied as %s", liveObj.GroupVersionKind(), gvk)
	}
	var helm []metav1.ManagedFieldsEntry
	for _, e := range entries {
		if e.Manager == FieldManager {
			helm = append(helm, e)
		}
	}
	if len(helm) != 1 || helm[0].Operation != metav1.ManagedFieldsOperationApply || helm[0].Subresource != "" || helm[0].APIVersion != gvk.GroupVersion().String() {
		return nil, fmt.Sprintf("helm's managed fields are not one Apply entry of %s", gvk.GroupVersion())
	}
	others := map[string][]metav1.ManagedFieldsEntry{}
	for _, e := range entries {
		if e.Manager == FieldManager {
			continue
		}
		if e.APIVersion != gvk.GroupVersion().String() {
			return nil, fmt.Sprintf("manager %q's fields are of %s", e.Manager, e.APIVersion)
		}
		others[e.Manager] = append(others[e.Manager], e)
	}
	return others, ""
}

// DeriveApply returns the object the API server would store for
// ApplyChange's merged object, without asking it, under Derive's rules for
// Helm 3's patches: the change from live to merged must be one Derive
// predicts (labels, annotations, a ConfigMap's or an Opaque Secret's
// payload, a ClusterIP Service's ports, a Deployment's container images;
// valid, not immutable). Otherwise it returns nil and why the server must
// be asked. The change is handed to Derive as the JSON merge patch from
// live to merged: on the maps of strings a JSON merge patch and a
// strategic merge patch are the same; a list in spec is given whole, as
// merged holds it, and then defaulted as the server defaults the merge.
// The result carries merged's managed fields: helm's, as the field manager
// recorded them.
func DeriveApply(live, merged *unstructured.Unstructured) (*unstructured.Unstructured, string) {
	diff := mergePatch(withoutManagedFields(live).Object, withoutManagedFields(merged).Object)
	out, why := derive(live, diff, specMerged)
	if out == nil {
		return nil, why
	}
	// merged's managed fields as they are: what the field manager (or
	// ApplyByFieldSets) wrote is already their canonical form.
	if mf, ok, _ := unstructured.NestedFieldNoCopy(merged.Object, "metadata", "managedFields"); ok {
		if meta, ok := out.Object["metadata"].(map[string]interface{}); ok {
			meta["managedFields"] = runtime.DeepCopyJSONValue(mf)
		}
	} else {
		out.SetManagedFields(nil)
	}
	return out, ""
}

// mergePatch is the JSON merge patch (RFC 7386) from a to b, two objects
// as unstructured holds them: what jsonpatch.CreateMergePatch returns for
// their JSON encodings, without encoding and decoding both whole objects
// (most of DeriveApply's cost). As there, a value is compared as JSON
// decodes it into interface{} (every number a float64), a changed value
// other than an object is replaced whole, and a removed key is null.
func mergePatch(a, b map[string]interface{}) map[string]interface{} {
	into := map[string]interface{}{}
	for key, bv := range b {
		av, ok := a[key]
		if !ok {
			into[key] = bv
			continue
		}
		am, _ := av.(map[string]interface{}) // a nil map is null
		bm, _ := bv.(map[string]interface{})
		switch {
		case am != nil && bm != nil:
			if d := mergePatch(am, bm); len(d) > 0 {
				into[key] = d
			}
		case !jsonvalue.DecodedEqual(av, bv):
			into[key] = bv
		}
	}
	for key := range a {
		if _, ok := b[key]; !ok {
			into[key] = nil
		}
	}
	return into
}

// Derivable reports whether Derive may predict some change of kind gk: the
// field manager's merge is worth running only for those.
func Derivable(gk schema.GroupKind) bool {
	_, ok := derivable[gk]
	return ok
}

// Underivable is obj, an object as unstructured holds it, without the
// fields Derive may change: its payload, its metadata labels and
// annotations, a Service's ports, a pod controller's (imageKinds)
// container images. Only the maps and lists on the way to them are
// copied.
func Underivable(obj map[string]interface{}) map[string]interface{} {
	out := maps.Clone(obj)
	for _, f := range []string{"data", "binaryData", "stringData"} {
		delete(out, f)
	}
	if meta, ok := out["metadata"].(map[string]interface{}); ok {
		meta = maps.Clone(meta)
		delete(meta, "labels")
		delete(meta, "annotations")
		out["metadata"] = meta
	}
	spec, ok := out["spec"].(map[string]interface{})
	if !ok {
		return out
	}
	gk := schema.FromAPIVersionAndKind(fmt.Sprint(out["apiVersion"]), fmt.Sprint(out["kind"])).GroupKind()
	switch {
	case gk == serviceKind:
		spec = maps.Clone(spec)
		delete(spec, "ports")
		out["spec"] = spec
	case imageKinds[gk] != nil:
		if s := imageless(spec); s.why == "" {
			out["spec"] = s.spec
		}
	}
	return out
}
