package classify

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// TestObjectStatus: a status plan's change as the object's status; the
// objects are read only for a drifted one, and each drifted field says its
// stored and live values and who last wrote the live one.
func TestObjectStatus(t *testing.T) {
	id := manifest.ObjectID{Kind: "ConfigMap", Namespace: "prod", Name: "cfg"}
	stored := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "cfg", "namespace": "prod"},
		"data": map[string]interface{}{"a": "1", "b": "x"}}}
	liveObj := stored.DeepCopy()
	_ = unstructured.SetNestedField(liveObj.Object, "2", "data", "a")
	_ = unstructured.SetNestedField(liveObj.Object, "y", "data", "b")
	older, newer := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), metav1.NewTime(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC))
	owns := func(field string) *metav1.FieldsV1 {
		return &metav1.FieldsV1{Raw: []byte(`{"f:data":{"f:` + field + `":{}}}`)}
	}
	liveObj.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "helm", Operation: metav1.ManagedFieldsOperationUpdate, Time: &newer, FieldsV1: owns("b")},
		{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, Time: &older, FieldsV1: owns("a")},
		{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationApply, Time: &newer, FieldsV1: owns("a")},
	})
	tests := []struct {
		name      string
		change    plan.Change
		want      plan.ObjectState
		wantNext  string
		wantDrift []plan.FieldDrift
	}{
		{"missing", plan.Change{ID: id, Action: plan.ActionCreate}, plan.StateMissing, string(plan.ActionCreate), nil},
		{"in sync", plan.Change{ID: id, Action: plan.ActionNoop}, plan.StateInSync, "", nil},
		{"drifted: each field with who wrote the live value, the conflict's field added",
			plan.Change{ID: id, Action: plan.ActionUpdate, Drift: []plan.Drift{{Path: "data.a", Reverted: true}},
				Reasons: []plan.Reason{{Path: "data.b", Manager: "other"}}},
			plan.StateDrifted, string(plan.ActionUpdate), []plan.FieldDrift{
				{Path: "data.a", Stored: "1", Live: "2", Manager: "kubectl-edit", Operation: "Apply", Time: newer.Time, Reverted: true},
				{Path: "data.b", Stored: "x", Live: "y"}}},
		{"drift an ignore rule leaves: the next upgrade does nothing",
			plan.Change{ID: id, Action: plan.ActionUpdate, Ignored: true, Drift: []plan.Drift{{Path: "data.b"}}},
			plan.StateDrifted, string(plan.ActionNoop), []plan.FieldDrift{{Path: "data.b", Stored: "x", Live: "y"}}},
	}
	masker := redact.NewMasker()
	san := redact.NewSanitizer(masker)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reads := 0
			compared := func() (*unstructured.Unstructured, *unstructured.Unstructured) {
				reads++
				return stored.DeepCopy(), liveObj.DeepCopy()
			}
			got := ObjectStatus(&tt.change, compared, masker, san)
			if got.State != tt.want || got.Next != tt.wantNext {
				t.Errorf("state %q next %q, want %q %q", got.State, got.Next, tt.want, tt.wantNext)
			}
			if wantReads := map[bool]int{true: 1}[tt.want == plan.StateDrifted]; reads != wantReads {
				t.Errorf("objects read %d times, want %d (only a drifted object's)", reads, wantReads)
			}
			if !reflect.DeepEqual(got.Drift, tt.wantDrift) {
				t.Errorf("drift\n got %+v\nwant %+v", got.Drift, tt.wantDrift)
			}
		})
	}
}

// TestObjectStatusMasksSecrets: a Secret's drifted values never show,
// encoded or not.
func TestObjectStatusMasksSecrets(t *testing.T) {
	secret := func(value string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "Secret", "metadata": map[string]interface{}{"name": "s", "namespace": "prod"},
			"data": map[string]interface{}{"password": base64.StdEncoding.EncodeToString([]byte(value))}}}
	}
	ch := plan.Change{ID: manifest.ObjectID{Kind: "Secret", Namespace: "prod", Name: "s"}, Action: plan.ActionUpdate,
		Drift: []plan.Drift{{Path: "data.password", Reverted: true}}}
	masker := redact.NewMasker()
	got := ObjectStatus(&ch, func() (*unstructured.Unstructured, *unstructured.Unstructured) {
		return secret("stored-hunter2"), secret("live-hunter2")
	}, masker, redact.NewSanitizer(masker))
	if len(got.Drift) != 1 {
		t.Fatalf("drift %+v, want the one field", got.Drift)
	}
	for _, v := range []string{"stored-hunter2", "live-hunter2"} {
		for _, shown := range []string{got.Drift[0].Stored, got.Drift[0].Live} {
			if strings.Contains(shown, v) || strings.Contains(shown, base64.StdEncoding.EncodeToString([]byte(v))) {
				t.Errorf("drift shows %q: the Secret's value %q leaks", shown, v)
			}
		}
	}
	if got.Drift[0].Stored == got.Drift[0].Live {
		t.Errorf("stored and live both %q: the masked values still tell a change", got.Drift[0].Stored)
	}
}
