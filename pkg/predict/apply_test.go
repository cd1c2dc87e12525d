package predict

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/managedfields"
)

// TestDecideApplyAsksWhenUnsure is the table of the managed fields
// DecideApply does not decide from, and of those ApplyNoopByFieldSets
// decides a no-op from (the decisions themselves are checked
// against the API server in pkg/planner's TestDecideApplyAgreesWithServer).
// The schemas are deduced (lists atomic, every map a field of its own),
// enough for a ConfigMap.
func TestDecideApplyAsksWhenUnsure(t *testing.T) {
	const deducedData = `{"f:data":{".":{},"f:key":{}}}` // what the field manager records for config
	config := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": "cm", "namespace": "ns"},
		"data":     map[string]interface{}{"key": "a"},
	}}
	helmApply := metav1.ManagedFieldsEntry{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(deducedData)}}
	with := func(es ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
		l := config.DeepCopy()
		l.SetManagedFields(es)
		return l
	}
	other := func(op metav1.ManagedFieldsOperationType, apiVersion, subresource, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: "other", Operation: op, APIVersion: apiVersion, Subresource: subresource,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	helmUpdate := helmApply
	helmUpdate.Operation = metav1.ManagedFieldsOperationUpdate
	helmOld := helmApply
	helmOld.APIVersion = "v0"
	helmWider := helmApply
	helmWider.FieldsV1 = &metav1.FieldsV1{Raw: []byte(`{"f:data":{".":{},"f:key":{},"f:gone":{}}}`)}
	tc := managedfields.NewDeducedTypeConverter()
	cases := []struct {
		name string
		tc   managedfields.TypeConverter
		live *unstructured.Unstructured
		want ApplyVerdict
		// fast: ApplyNoopByFieldSets shows the no-op without the full
		// merge.
		fast bool
	}{
		{"no schema", nil, with(helmApply), ApplyAsk, false},
		{"no managed fields", tc, with(), ApplyAsk, false},
		{"helm's fields written by an update (Helm 3)", tc, with(helmUpdate), ApplyAsk, false},
		{"helm's fields of another version", tc, with(helmOld), ApplyAsk, false},
		{"helm twice", tc, with(helmApply, helmUpdate), ApplyAsk, false},
		{"another manager's fields of another version", tc, with(helmApply, other(metav1.ManagedFieldsOperationUpdate, "v0", "", `{"f:data":{}}`)), ApplyAsk, false},
		{"unreadable fields", tc, with(helmApply, other(metav1.ManagedFieldsOperationUpdate, "v1", "", `{"f:data":`)), ApplyAsk, false},
		{"a field shared at the same value", tc, with(helmApply, other(metav1.ManagedFieldsOperationApply, "v1", "", `{"f:data":{"f:key":{}}}`)), ApplyAsk, false},
		{"a field owned through a subresource", tc, with(helmApply, other(metav1.ManagedFieldsOperationUpdate, "v1", "status", `{"f:data":{"f:key":{}}}`)), ApplyAsk, false},
		{"another manager elsewhere", tc, with(helmApply, other(metav1.ManagedFieldsOperationUpdate, "v1", "", `{"f:metadata":{"f:labels":{"f:x":{}}}}`)), ApplyNoop, true},
		{"helm alone", tc, with(helmApply), ApplyNoop, true},
		{"helm's fields not what config sets", tc, with(helmWider), ApplyChange, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := DecideApply(c.tc, c.live, config); got.Verdict != c.want {
				t.Errorf("%v (%s), want %v", got.Verdict, got.Why, c.want)
			}
			if got := ApplyNoopByFieldSets(c.tc, c.live, config); got != c.fast {
				t.Errorf("ApplyNoopByFieldSets %v, want %v", got, c.fast)
			}
		})
	}
}
