package predict

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/jsonvalue"
)

// applyByFieldManager decides the apply of config onto liveObj by running
// the field manager's pipeline locally; entries are liveObj's managed
// fields, others those of the managers other than helm (otherManagers).
func applyByFieldManager(tc managedfields.TypeConverter, liveObj, config *unstructured.Unstructured, entries []metav1.ManagedFieldsEntry, others map[string][]metav1.ManagedFieldsEntry) ApplyDecision {
	gvk := config.GroupVersionKind()
	fm, err := managedfields.NewDefaultFieldManager(tc, sameVersion{}, noDefaults{}, unstructuredCreater{}, gvk, gvk.GroupVersion(), "", nil)
	if err != nil {
		return ask("no field manager for %s", gvk)
	}
	result, err := fm.Apply(liveObj.DeepCopy(), config.DeepCopy(), FieldManager, false)
	if err != nil {
		return conflict(err, others)
	}
	after, ok := result.(*unstructured.Unstructured)
	if !ok {
		return ask("the local apply returns no object")
	}
	// The fields config sets, as the field manager recorded them for helm.
	var applied *fieldpath.Set
	for _, e := range after.GetManagedFields() {
		if e.Manager == FieldManager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			if applied, err = fieldSet(e); err != nil {
				return ask("helm's new managed fields cannot be read")
			}
		}
	}
	if applied == nil {
		return ask("the local apply records no fields for helm")
	}
	if why := sharedFields(entries, applied); why != "" {
		return ApplyDecision{Verdict: ApplyAsk, Why: why}
	}
	if !sameObject(liveObj, after) {
		storedForm(after)
		return ApplyDecision{Verdict: ApplyChange, Merged: after}
	}
	return ApplyDecision{Verdict: ApplyNoop}
}

// conflict is the decision of a local apply that failed with err: the
// conflicts it names, unless one is with a manager of a subresource (or
// unknown), whose bookkeeping is the server's.
func conflict(err error, others map[string][]metav1.ManagedFieldsEntry) ApplyDecision {
	conflicts := Conflicts(err)
	if len(conflicts) == 0 {
		return ask("the local apply fails")
	}
	for _, cf := range conflicts {
		if es := others[cf.Manager]; len(es) == 0 || slices.ContainsFunc(es, func(e metav1.ManagedFieldsEntry) bool { return e.Subresource != "" }) {
			return ask("manager %q of a subresource owns fields the chart sets", cf.Manager)
		}
	}
	return ApplyDecision{Verdict: ApplyConflict, Conflicts: conflicts, Err: err}
}

// sharedFields says why the server must be asked when fields config sets
// (applied) are owned by another manager of entries too (shared at the
// same value, or through a subresource): the server's bookkeeping of
// shared ownership is not decided here. "" when none is.
func sharedFields(entries []metav1.ManagedFieldsEntry, applied *fieldpath.Set) string {
	var shared []string
	for _, e := range entries {
		if e.Manager == FieldManager {
			continue
		}
		set, err := fieldSet(e)
		if err != nil {
			return fmt.Sprintf("manager %q's managed fields cannot be read", e.Manager)
		}
		if set.Intersection(applied).Empty() {
			continue
		}
		if e.Subresource != "" {
			return fmt.Sprintf("manager %q of subresource %s owns fields the chart sets", e.Manager, e.Subresource)
		}
		shared = append(shared, e.Manager)
	}
	if len(shared) == 0 {
		return ""
	}
	slices.Sort(shared)
	return "fields the chart sets are shared with " + strings.Join(slices.Compact(shared), ", ")
}

// fieldSet decodes a managed-fields entry's field set.
func fieldSet(e metav1.ManagedFieldsEntry) (*fieldpath.Set, error) {
	if e.FieldsV1 == nil {
		return nil, errors.New("no fieldsV1")
	}
	set := &fieldpath.Set{}
	return set, set.FromJSON(bytes.NewReader(e.FieldsV1.Raw))
}

// sameObject reports whether the server stores after as before: the
// content as stored (storedForm) and the managed fields but their times,
// which the field manager moves for an applier whose merge differs from
// the live object, and which the API server puts back when nothing else
// changed (its IgnoreManagedFieldsTimestampsTransformer).
func sameObject(before, after *unstructured.Unstructured) bool {
	b, a := before.DeepCopy(), after.DeepCopy()
	storedForm(a)
	if !equality.Semantic.DeepEqual(timeless(b.GetManagedFields()), timeless(a.GetManagedFields())) {
		return false
	}
	unstructured.RemoveNestedField(b.Object, "metadata", "managedFields")
	unstructured.RemoveNestedField(a.Object, "metadata", "managedFields")
	return jsonvalue.SemanticEqual(b.Object, a.Object)
}

// secretV1 is the kind whose stringData storedForm folds into data.
var secretV1 = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}

// storedForm turns obj, merged, into what the API server stores: a v1
// Secret's stringData is write-only, folded into data by the conversion to
// the internal version (for a key in both, stringData's value wins). A
// value that is not a string is left, so the comparison fails and the
// server is asked.
func storedForm(obj *unstructured.Unstructured) {
	if obj.GroupVersionKind() != secretV1 {
		return
	}
	sd, ok := obj.Object["stringData"].(map[string]interface{})
	if !ok {
		return
	}
	data, _ := obj.Object["data"].(map[string]interface{})
	if data == nil {
		data = map[string]interface{}{}
	}
	for k, v := range sd {
		str, ok := v.(string)
		if !ok {
			return
		}
		data[k] = base64.StdEncoding.EncodeToString([]byte(str))
	}
	obj.Object["data"] = data
	delete(obj.Object, "stringData")
}

// timeless is es (a copy) in a fixed order without times: no decision
// reads either.
func timeless(es []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	es = slices.Clone(es)
	sortEntries(es)
	for i := range es {
		es[i].Time = nil
	}
	return es
}

func sortEntries(es []metav1.ManagedFieldsEntry) {
	sort.SliceStable(es, func(i, j int) bool {
		return es[i].Manager+"\x00"+string(es[i].Operation)+"\x00"+es[i].Subresource < es[j].Manager+"\x00"+string(es[j].Operation)+"\x00"+es[j].Subresource
	})
}

// sameVersion is the field manager's object converter for objects that are
// never converted: the live object, the configuration and every manager
// are of one version (DecideApply asks the server otherwise).
type sameVersion struct{}

func (sameVersion) Convert(in, out, _ interface{}) error {
	return errors.New("conversion is not done locally")
}

func (sameVersion) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	gvk := in.GetObjectKind().GroupVersionKind()
	if target, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{gvk}); ok && target == gvk {
		return in, nil
	}
	return nil, fmt.Errorf("converting %s is not done locally", gvk)
}

func (sameVersion) ConvertFieldLabel(schema.GroupVersionKind, string, string) (string, string, error) {
	return "", "", errors.New("field labels are not converted locally")
}

// noDefaults leaves the merged object undefaulted: a no-op merge is the
// live object, which the server defaulted already.
type noDefaults struct{}

func (noDefaults) Default(runtime.Object) {}

// unstructuredCreater makes the empty objects the field manager asks for.
type unstructuredCreater struct{}

func (unstructuredCreater) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind)
	return u, nil
}
