package apply

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/helmtest"
)

// TestCheckRestorable: an entry is restorable only as an object of the
// deployed revision, in the release namespace, of a kind the tool
// recreates, agreeing with the manifest at every field it sets; fields the
// chart does not set may differ.
func TestCheckRestorable(t *testing.T) {
	deployed, err := manifest.Split("deployed", deployedObjects+`
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {resources: {requests: {storage: 1Gi}}}
`, relNS, manifest.StaticScoper{})
	if err != nil {
		t.Fatal(err)
	}
	sts := `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: app-db, namespace: demo, labels: {extra: kept}}
spec:
  replicas: 5
  selector: {matchLabels: {app: app-db}}
  volumeClaimTemplates:
    - metadata: {name: data}
      spec: {resources: {requests: {storage: 1024Mi}}}
`
	tests := []struct {
		name, obj, want string
	}{
		{"as deployed, with drift the chart does not set and the server's form of a quantity", sts, ""},
		{"a field the chart sets changed", strings.Replace(sts, "1024Mi", "5Gi", 1), "differs from the deployed revision 1 at spec.volumeClaimTemplates[0].spec.resources.requests.storage, which the chart sets"},
		{"another namespace", strings.Replace(sts, "namespace: demo", "namespace: kube-system", 1), "it is in namespace kube-system, not in the release namespace demo"},
		{"not in the manifest", strings.Replace(sts, "name: app-db,", "name: other,", 1), "it is not an object of the release's deployed revision 1"},
		{"cluster-scoped", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: x}\nroleRef: {kind: ClusterRole, name: cluster-admin}\n", "it is in no namespace (cluster-scoped)"},
		{"a kind never recreated", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: demo}\nspec: {resources: {requests: {storage: 1Gi}}}\n", "safe-upgrade never recreates a PersistentVolumeClaim"},
		{"another version", strings.Replace(sts, "apps/v1", "apps/v1beta2", 1), "it is apps/v1beta2, while the deployed revision 1 has it as apps/v1"},
		{"no kind", "apiVersion: v1\nmetadata: {name: x, namespace: demo}\n", "it has no apiVersion, kind or name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tt.obj), &obj.Object); err != nil {
				t.Fatal(err)
			}
			err := checkRestorable(obj, relNS, deployed, 1)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// TestKeptFields: fields another manager owns that the chart does not set
// are named, with their manager; Helm's own and the chart's are not.
func TestKeptFields(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "apps/v1", "kind": "StatefulSet",
		"metadata": map[string]interface{}{"name": "app-db"}, "spec": map[string]interface{}{"replicas": int64(5), "serviceName": "db"}}}
	obj.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "helm", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:serviceName":{}}}`)}},
		{Manager: "hpa", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}},
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:serviceName":{}}}`)}},
	})
	want := &unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{"serviceName": "db"}}}
	if got := strings.Join(keptFields(obj, want), "; "); got != "spec.replicas (hpa)" {
		t.Errorf("kept %q, want spec.replicas (hpa)", got)
	}
}

// TestRecoverRefusesUntrustedJournal: a journal entry that fails the checks
// refuses the whole journal, naming the entry and why, and nothing is
// created or changed; a journal whose entry names another object than it
// holds is refused as malformed.
func TestRecoverRefusesUntrustedJournal(t *testing.T) {
	tests := []struct {
		name string
		edit func(j *journal)
		want string
	}{
		{"a field the chart sets edited", func(j *journal) {
			_ = unstructured.SetNestedField(j.rec.Objects[0].Object, map[string]interface{}{"app": "evil"}, "spec", "selector", "matchLabels")
		}, "entry 1, StatefulSet.apps/demo/app-db: it differs from the deployed revision 1 at spec.selector.matchLabels.app"},
		{"an object of another release", func(j *journal) {
			j.rec.Objects[0].Name = "other"
			_ = unstructured.SetNestedField(j.rec.Objects[0].Object, "other", "metadata", "name")
		}, "entry 1, StatefulSet.apps/demo/other: it is not an object of the release's deployed revision 1"},
		{"an entry holding another object", func(j *journal) { j.rec.Objects[0].Name = "other" },
			"journal entry 1 (StatefulSet.apps/demo/other): its object is apps/v1 StatefulSet demo/app-db, not the one the entry names"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, fc, j := killedApply(t, release.StatusPendingUpgrade)
			tt.edit(j)
			if err := j.save(context.Background()); err != nil {
				t.Fatal(err)
			}
			before := len(fc.client.Actions())
			var out bytes.Buffer
			err := recoverRelease(context.Background(), RecoverRequest{Config: f.cfg, Cluster: fc.Cluster, Name: relName, Namespace: relNS}, &out)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("recover: %v, want %q", err, tt.want)
			}
			for _, a := range fc.client.Actions()[before:] {
				if a.GetVerb() != "get" && a.GetVerb() != "list" {
					t.Errorf("the refused recovery sent %s %s", a.GetVerb(), a.GetResource().Resource)
				}
			}
			if rel, _ := f.cfg.Releases.Get(relName, 2); rel.Info.Status != release.StatusPendingUpgrade {
				t.Errorf("revision 2 is %s, want it left pending-upgrade", rel.Info.Status)
			}
		})
	}
}

// TestRecoverAsksFirst: --recover says what it will re-create and writes
// nothing when the confirmation says no.
func TestRecoverAsksFirst(t *testing.T) {
	f, fc, _ := killedApply(t, release.StatusPendingUpgrade)
	var asked string
	before := len(fc.client.Actions())
	var out bytes.Buffer
	err := recoverRelease(context.Background(), RecoverRequest{Config: f.cfg, Cluster: fc.Cluster, Name: relName, Namespace: relNS,
		Confirm: func(plan string) (bool, error) { asked = plan; return false, nil }}, &out)
	if err == nil || !strings.Contains(err.Error(), "recovery not confirmed; nothing was restored or changed") {
		t.Fatalf("recover: %v", err)
	}
	if !strings.Contains(asked, "StatefulSet.apps/demo/app-db: re-create it with its previous spec (it had uid sts-uid)") {
		t.Errorf("asked %q", asked)
	}
	for _, a := range fc.client.Actions()[before:] {
		if a.GetVerb() != "get" && a.GetVerb() != "list" {
			t.Errorf("the declined recovery sent %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// TestRestoreFinishesAnInterruptedRestore: a restore killed after its
// create (the object has the restore's field manager, not its previous
// ones) is finished by the next: the managers are put back and the object
// is not said to be Helm's.
func TestRestoreFinishesAnInterruptedRestore(t *testing.T) {
	f := newFixture(t)
	f.seed(t)
	helmtest.NextRevision(t, f.cfg, relName, release.StatusPendingUpgrade)
	fc := newFakeCluster(t)
	sts := fc.client.Resource(stsGVR).Namespace(relNS)
	live, err := sts.Get(context.Background(), "app-db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "helm", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1"}})
	j := newJournal(fc.client.Resource(secretsGVR).Namespace(relNS), relName, relNS, 2, "m", []*recreateTarget{{live: live}})
	j.rec.Step = releasestate.StepRestoring
	if err := j.save(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The interrupted restore's create: another UID, the restore's manager.
	deleteSts(t, fc)
	again := &unstructured.Unstructured{Object: restorable(live)}
	again.SetUID("restored-uid")
	again.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: restoreManager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1"}})
	if err := fc.client.Tracker().Create(stsGVR, again, relNS); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := recoverRelease(context.Background(), RecoverRequest{Config: f.cfg, Cluster: fc.Cluster, Name: relName, Namespace: relNS}, &out); err != nil {
		t.Fatalf("recover: %v\n%s", err, out.String())
	}
	for _, want := range []string{"finish the restore that re-created it (uid restored-uid)",
		"safe-upgrade deleted StatefulSet.apps/demo/app-db for recreation; restored from the recreate journal: StatefulSet.apps/demo/app-db re-created with its previous spec by an earlier restore (uid restored-uid), its previous field managers put back"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed\n%s\nwant %q", out.String(), want)
		}
	}
	if strings.Contains(out.String(), "Helm's upgrade or rollback") {
		t.Errorf("the restored object is said to be Helm's:\n%s", out.String())
	}
	got, err := sts.Get(context.Background(), "app-db", metav1.GetOptions{})
	if err != nil || len(got.GetManagedFields()) != 1 || got.GetManagedFields()[0].Manager != "helm" {
		t.Errorf("managers after recover: %v %+v, want helm's back", err, got)
	}
}

// TestUndoSaysWhatWasDeleted: a delete whose answer was lost (the journal
// never marked it) still deleted the object: the line says so, from a
// fresh read, and the object is restored.
func TestUndoSaysWhatWasDeleted(t *testing.T) {
	fc := newFakeCluster(t)
	j := writeJournal(t, fc, releasestate.StepDeleting, false)
	deleteSts(t, fc)
	line, err := fc.recreator(&bytes.Buffer{}).undo(j)
	want := "safe-upgrade deleted StatefulSet.apps/demo/app-db for recreation; restored from the recreate journal: StatefulSet.apps/demo/app-db re-created"
	if err != nil || !strings.HasPrefix(line, want) {
		t.Errorf("undo: %v %q, want %q", err, line, want)
	}
	j = writeJournal(t, fc, releasestate.StepDeleting, true) // marked, but the delete never happened
	if line, err := fc.recreator(&bytes.Buffer{}).undo(j); err != nil || !strings.HasPrefix(line, "safe-upgrade deleted nothing; restored from the recreate journal: StatefulSet.apps/demo/app-db was not deleted") {
		t.Errorf("undo: %v %q", err, line)
	}
}
