package apply

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clienttesting "k8s.io/client-go/testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/helmtest"
)

var stsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}

// secretsGVR is live.SecretsGVR, for the tests whose live object is a
// variable called live.
var secretsGVR = live.SecretsGVR

func (fc *fakeCluster) secrets() interface {
	Get(context.Context, string, metav1.GetOptions, ...string) (*unstructured.Unstructured, error)
} {
	return fc.client.Resource(live.SecretsGVR).Namespace(relNS)
}

// writeJournal writes the journal an apply of revision 2 recreating the
// StatefulSet app-db writes, at step; deleted is its Deleted mark.
func writeJournal(t *testing.T, fc *fakeCluster, step releasestate.Step, deleted bool) *journal {
	t.Helper()
	live, err := fc.client.Resource(stsGVR).Namespace(relNS).Get(context.Background(), "app-db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j := newJournal(fc.client.Resource(secretsGVR).Namespace(relNS), relName, relNS, 2, "manifest",
		[]*recreateTarget{{live: live}})
	j.rec.Step = step
	j.rec.Objects[0].Deleted = deleted
	if err := j.save(context.Background()); err != nil {
		t.Fatal(err)
	}
	return j
}

// killedApply is what an apply of revision 2 (left at status) killed after
// deleting the StatefulSet leaves: a deployed revision 1, revision 2 and
// the journal.
func killedApply(t *testing.T, status release.Status) (*fixture, *fakeCluster, *journal) {
	t.Helper()
	f := newFixture(t)
	f.seed(t)
	helmtest.NextRevision(t, f.cfg, relName, status)
	fc := newFakeCluster(t)
	j := writeJournal(t, fc, releasestate.StepUpgrading, true)
	deleteSts(t, fc)
	return f, fc, j
}

func assertNoJournal(t *testing.T, fc *fakeCluster) {
	t.Helper()
	if _, err := fc.secrets().Get(context.Background(), releasestate.JournalName(relName), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the journal Secret remains (%v)", err)
	}
}

// TestJournalRoundTrip: what is written is what is read back, stripped of
// what the server sets, with the Secret's type and release label.
func TestJournalRoundTrip(t *testing.T) {
	fc := newFakeCluster(t)
	sts := fc.client.Resource(stsGVR).Namespace(relNS)
	live, err := sts.Get(context.Background(), "app-db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live.SetResourceVersion("42")
	live.SetFinalizers([]string{metav1.FinalizerOrphanDependents, "example.com/keep"})
	live.Object["status"] = map[string]interface{}{"replicas": int64(2)}
	j := newJournal(fc.client.Resource(secretsGVR).Namespace(relNS), relName, relNS, 2, "manifest", []*recreateTarget{{live: live}, {live: nil}})
	if err := j.save(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, err := fc.secrets().Get(context.Background(), releasestate.JournalName(relName), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if typ, _, _ := unstructured.NestedString(s.Object, "type"); typ != releasestate.JournalType || s.GetLabels()[releasestate.JournalReleaseLabel] != relName {
		t.Errorf("journal Secret type %q labels %v", typ, s.GetLabels())
	}
	got, err := readJournal(context.Background(), fc.Cluster, relNS, relName)
	if err != nil || got == nil {
		t.Fatalf("readJournal: %v %v", got, err)
	}
	if got.rec.Revision != 2 || got.rec.Step != releasestate.StepDeleting || got.rec.ManifestDigest != manifestDigest("manifest") || len(got.rec.Objects) != 1 {
		t.Fatalf("read back %+v", got.rec)
	}
	o := got.rec.Objects[0]
	meta := o.Object["metadata"].(map[string]interface{})
	if o.UID != "sts-uid" || meta["uid"] != nil || meta["resourceVersion"] != nil || o.Object["status"] != nil {
		t.Errorf("journal object not stripped: %+v", o)
	}
	if fin := (&unstructured.Unstructured{Object: o.Object}).GetFinalizers(); len(fin) != 1 || fin[0] != "example.com/keep" {
		t.Errorf("finalizers %v, want only example.com/keep", fin)
	}
	if _, ok, _ := unstructured.NestedSlice(o.Object, "spec", "volumeClaimTemplates"); !ok {
		t.Error("the spec was not kept")
	}
}

// TestJournalRestoreAtEachStep: whatever step a failure or a kill left the
// journal at, restore puts back exactly what is missing.
func TestJournalRestoreAtEachStep(t *testing.T) {
	tests := []struct {
		name string
		step releasestate.Step
		// deleted is the journal's mark; cluster makes the cluster's state.
		deleted bool
		cluster func(t *testing.T, fc *fakeCluster)
		want    string
		wantUID string // "" : a new object was created
	}{
		{name: "deleting: killed before the delete", step: releasestate.StepDeleting,
			want: "StatefulSet.apps/demo/app-db was not deleted", wantUID: "sts-uid"},
		{name: "deleting: killed after the delete, before the mark", step: releasestate.StepDeleting, cluster: deleteSts,
			want: "StatefulSet.apps/demo/app-db re-created with its previous spec"},
		{name: "deleting: deleted and marked", step: releasestate.StepDeleting, deleted: true, cluster: deleteSts,
			want: "StatefulSet.apps/demo/app-db re-created with its previous spec"},
		{name: "deleting: deletion still finishing", step: releasestate.StepDeleting, deleted: true, cluster: terminating,
			want: "StatefulSet.apps/demo/app-db re-created with its previous spec"},
		{name: "upgrading: Helm did not create it", step: releasestate.StepUpgrading, deleted: true, cluster: deleteSts,
			want: "StatefulSet.apps/demo/app-db re-created with its previous spec"},
		{name: "upgrading: Helm (or its rollback) created it", step: releasestate.StepUpgrading, deleted: true, cluster: replaced,
			want: "StatefulSet.apps/demo/app-db was created again since, by Helm's upgrade or rollback (uid new-uid), left as it is", wantUID: "new-uid"},
		{name: "restoring: a restore was interrupted", step: releasestate.StepRestoring, deleted: true, cluster: deleteSts,
			want: "StatefulSet.apps/demo/app-db re-created with its previous spec"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeCluster(t)
			writeJournal(t, fc, tt.step, tt.deleted)
			if tt.cluster != nil {
				tt.cluster(t, fc)
			}
			j, err := readJournal(context.Background(), fc.Cluster, relNS, relName)
			if err != nil {
				t.Fatal(err)
			}
			r := fc.recreator(&bytes.Buffer{})
			r.timeout = 5 * time.Second
			line, err := r.undo(j)
			if err != nil {
				t.Fatalf("undo: %v (%s)", err, line)
			}
			if !strings.Contains(line, tt.want) {
				t.Errorf("undo said %q, want %q", line, tt.want)
			}
			got, err := fc.client.Resource(stsGVR).Namespace(relNS).Get(context.Background(), "app-db", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the StatefulSet is missing after restore: %v", err)
			}
			if tt.wantUID != "" && string(got.GetUID()) != tt.wantUID {
				t.Errorf("uid %s, want %s", got.GetUID(), tt.wantUID)
			}
			if tt.wantUID == "" {
				if got.GetDeletionTimestamp() != nil {
					t.Error("restored object is being deleted")
				}
				if sel, _, _ := unstructured.NestedString(got.Object, "spec", "selector", "matchLabels", "app"); sel != "app-db" {
					t.Errorf("restored spec %v", got.Object["spec"])
				}
			}
			assertNoJournal(t, fc)
		})
	}
}

func deleteSts(t *testing.T, fc *fakeCluster) {
	t.Helper()
	if err := fc.client.Tracker().Delete(stsGVR, relNS, "app-db"); err != nil {
		t.Fatal(err)
	}
}

// terminating leaves the old object with a deletionTimestamp for a while.
func terminating(t *testing.T, fc *fakeCluster) {
	t.Helper()
	obj, err := fc.client.Resource(stsGVR).Namespace(relNS).Get(context.Background(), "app-db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	obj.SetDeletionTimestamp(&now)
	if err := fc.client.Tracker().Update(stsGVR, obj, relNS); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = fc.client.Tracker().Delete(stsGVR, relNS, "app-db")
	}()
}

func replaced(t *testing.T, fc *fakeCluster) {
	t.Helper()
	deleteSts(t, fc)
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("apps/v1")
	obj.SetKind("StatefulSet")
	obj.SetName("app-db")
	obj.SetNamespace(relNS)
	obj.SetUID("new-uid")
	if err := fc.client.Tracker().Create(stsGVR, obj, relNS); err != nil {
		t.Fatal(err)
	}
}

// TestRecover settles what a killed apply left: the pending revision is
// marked failed and the object restored; a deployed revision only loses
// its journal.
func TestRecover(t *testing.T) {
	tests := []struct {
		name       string
		status     release.Status
		wantStatus release.Status
		wantOut    []string
		restored   bool
	}{
		{name: "killed while Helm waited on a hook", status: release.StatusPendingUpgrade, wantStatus: release.StatusFailed, restored: true,
			wantOut: []string{"interrupted at step \"upgrading\"", "re-created with its previous spec", "Revision 2 was left pending-upgrade: marked failed"}},
		{name: "killed after the upgrade finished", status: release.StatusDeployed, wantStatus: release.StatusDeployed,
			wantOut: []string{"Revision 2 was deployed: the upgrade finished; the journal is removed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, fc, _ := killedApply(t, tt.status)
			var out bytes.Buffer
			if err := recoverRelease(context.Background(), RecoverRequest{Config: f.cfg, Cluster: fc.Cluster, Name: relName, Namespace: relNS, Timeout: render.DefaultTimeout}, &out); err != nil {
				t.Fatalf("recover: %v\n%s", err, out.String())
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("printed %q, want %q", out.String(), w)
				}
			}
			rel, err := f.cfg.Releases.Get(relName, 2)
			if err != nil || rel.Info.Status != tt.wantStatus {
				t.Fatalf("revision 2: %v %v", err, rel)
			}
			if tt.wantStatus == release.StatusFailed && !strings.Contains(rel.Info.Description, "interrupted") {
				t.Errorf("description %q", rel.Info.Description)
			}
			_, err = fc.client.Resource(stsGVR).Namespace(relNS).Get(context.Background(), "app-db", metav1.GetOptions{})
			if tt.restored != (err == nil) {
				t.Errorf("restored %v, want %v", err == nil, tt.restored)
			}
			assertNoJournal(t, fc)
			// Nothing left to recover.
			out.Reset()
			if err := recoverRelease(context.Background(), RecoverRequest{Config: f.cfg, Cluster: fc.Cluster, Name: relName, Namespace: relNS}, &out); err != nil || !strings.Contains(out.String(), "nothing to recover") {
				t.Errorf("second recover: %v %q", err, out.String())
			}
		})
	}
}

// TestGrowClaims: after a StatefulSet recreate that asks more storage of a
// claim template, each existing claim is grown when bound and its
// StorageClass allows expansion; otherwise it keeps its size and the line
// says why.
func TestGrowClaims(t *testing.T) {
	fc := newFakeCluster(t)
	tracker := fc.client.Tracker()
	for name, expand := range map[string]bool{"expandable": true, "fixed": false} {
		sc := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
			"metadata": map[string]interface{}{"name": name}, "provisioner": "example.com/x", "allowVolumeExpansion": expand}}
		if err := tracker.Create(live.StorageClassesGVR, sc, ""); err != nil {
			t.Fatal(err)
		}
	}
	claims := fc.client.Resource(live.ClaimsGVR).Namespace(relNS)
	setClaim := func(name, class, phase string) {
		pvc, err := claims.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pvc.Object["spec"] = map[string]interface{}{"storageClassName": class, "resources": map[string]interface{}{"requests": map[string]interface{}{"storage": "1Gi"}}}
		pvc.Object["status"] = map[string]interface{}{"phase": phase}
		if err := tracker.Update(live.ClaimsGVR, pvc, relNS); err != nil {
			t.Fatal(err)
		}
	}
	setClaim("data-app-db-0", "expandable", "Bound")
	setClaim("data-app-db-1", "expandable", "Pending")
	setClaim("data-app-db-other-0", "fixed", "Bound") // not a claim of app-db

	var out bytes.Buffer
	r := fc.recreator(&out)
	targets, err := r.prepare(context.Background(), []plan.Change{recreateChange("apps", "StatefulSet", relNS, "app-db")}, plannedObjects)
	if err != nil {
		t.Fatal(err)
	}
	r.grow(context.Background(), targets)
	for _, want := range []string{
		"PersistentVolumeClaim/demo/data-app-db-0: request grown from 1Gi to 2Gi (StorageClass expandable allows expansion",
		"PersistentVolumeClaim/demo/data-app-db-1: keeps 1Gi, not grown to 2Gi: it is Pending, not Bound (the API server resizes bound claims only)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed\n%s\nwant %q", out.String(), want)
		}
	}
	if strings.Contains(out.String(), "data-app-db-other-0") {
		t.Errorf("a claim of another StatefulSet was considered:\n%s", out.String())
	}
	size := func(name string) string {
		pvc, err := claims.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s, _, _ := unstructured.NestedString(pvc.Object, "spec", "resources", "requests", "storage")
		return s
	}
	if size("data-app-db-0") != "2Gi" || size("data-app-db-1") != "1Gi" {
		t.Errorf("requests: %s, %s; want 2Gi, 1Gi", size("data-app-db-0"), size("data-app-db-1"))
	}

	// A class that does not allow expansion.
	setClaim("data-app-db-0", "fixed", "Bound")
	out.Reset()
	r.grow(context.Background(), targets)
	if want := "PersistentVolumeClaim/demo/data-app-db-0: keeps 1Gi, not grown to 2Gi: its StorageClass fixed does not allow volume expansion"; !strings.Contains(out.String(), want) {
		t.Errorf("printed\n%s\nwant %q", out.String(), want)
	}
}

// TestJournalJobRestorable: a Job's generated selector and UID labels are
// dropped, so the server accepts it again and generates new ones.
func TestJournalJobRestorable(t *testing.T) {
	job := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]interface{}{"name": "migrate", "uid": "job-uid", "labels": map[string]interface{}{"app": "x", "batch.kubernetes.io/controller-uid": "job-uid"}},
		"spec": map[string]interface{}{
			"selector": map[string]interface{}{"matchLabels": map[string]interface{}{"batch.kubernetes.io/controller-uid": "job-uid"}},
			"template": map[string]interface{}{"metadata": map[string]interface{}{"labels": map[string]interface{}{
				"app": "x", "controller-uid": "job-uid", "batch.kubernetes.io/controller-uid": "job-uid", "job-name": "migrate", "batch.kubernetes.io/job-name": "migrate"}}},
		}}}
	got := &unstructured.Unstructured{Object: restorable(job)}
	if _, found, _ := unstructured.NestedMap(got.Object, "spec", "selector"); found {
		t.Error("the generated selector was kept")
	}
	tmpl, _, _ := unstructured.NestedStringMap(got.Object, "spec", "template", "metadata", "labels")
	if len(tmpl) != 1 || tmpl["app"] != "x" || len(got.GetLabels()) != 1 || got.GetLabels()["app"] != "x" {
		t.Errorf("labels %v, template labels %v: want only app=x", got.GetLabels(), tmpl)
	}
}

// TestJournalRestoresServiceWithNewIP: the old cluster IP was taken since
// the delete; the Service is restored with one the server allocates.
func TestJournalRestoresServiceWithNewIP(t *testing.T) {
	fc := newFakeCluster(t)
	svcGVR := schema.GroupVersionResource{Version: "v1", Resource: "services"}
	live, err := fc.client.Resource(svcGVR).Namespace(relNS).Get(context.Background(), "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.SetNestedSlice(live.Object, []interface{}{map[string]interface{}{"port": int64(80), "nodePort": int64(30080)}}, "spec", "ports")
	j := newJournal(fc.client.Resource(secretsGVR).Namespace(relNS), relName, relNS, 2, "m", []*recreateTarget{{live: live}})
	if err := j.save(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := fc.client.Tracker().Delete(svcGVR, relNS, "api"); err != nil {
		t.Fatal(err)
	}
	fc.client.PrependReactor("create", "services", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj := a.(clienttesting.CreateActionImpl).GetObject().(*unstructured.Unstructured)
		if ip, _, _ := unstructured.NestedString(obj.Object, "spec", "clusterIP"); ip == "10.96.0.10" {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "api",
				field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs"), ip, "provided IP is already allocated")})
		}
		return false, nil, nil
	})
	r := fc.recreator(&bytes.Buffer{})
	line, err := r.undo(j)
	if err != nil || !strings.Contains(line, "Service/demo/api re-created with its previous spec, with a new cluster IP and node ports") {
		t.Fatalf("undo: %v %q", err, line)
	}
	got, err := fc.client.Resource(svcGVR).Namespace(relNS).Get(context.Background(), "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ports, _, _ := unstructured.NestedSlice(got.Object, "spec", "ports")
	if ip, found, _ := unstructured.NestedString(got.Object, "spec", "clusterIP"); found || len(ports) != 1 || ports[0].(map[string]interface{})["nodePort"] != nil {
		t.Errorf("restored Service keeps clusterIP %q or node ports %v", ip, ports)
	}
}

// TestJournalRestoresFieldManagers: a restored object gets its previous
// field managers back (Helm 4's next server-side apply would otherwise
// conflict with the restoring client); when the server refuses that update,
// the object stays restored and the line says the managers were not.
func TestJournalRestoresFieldManagers(t *testing.T) {
	deployGVR := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	managers := []metav1.ManagedFieldsEntry{{Manager: "helm", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1"}}
	tests := []struct {
		name         string
		refuseUpdate bool
		wantLine     string
		wantManagers []metav1.ManagedFieldsEntry
	}{
		{"managers put back", false, "Deployment.apps/demo/web re-created with its previous spec (uid", managers},
		{"update refused", true, "Deployment.apps/demo/web re-created with its previous spec, but not its field managers (", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeCluster(t)
			live, err := fc.client.Resource(deployGVR).Namespace(relNS).Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			live.SetManagedFields(managers)
			j := newJournal(fc.client.Resource(secretsGVR).Namespace(relNS), relName, relNS, 2, "m", []*recreateTarget{{live: live}})
			if err := j.save(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := fc.client.Tracker().Delete(deployGVR, relNS, "web"); err != nil {
				t.Fatal(err)
			}
			if tt.refuseUpdate {
				fc.client.PrependReactor("update", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", nil)
				})
			}
			line, err := fc.recreator(&bytes.Buffer{}).undo(j)
			if err != nil || !strings.Contains(line, tt.wantLine) {
				t.Fatalf("undo: %v %q, want it to say %q", err, line, tt.wantLine)
			}
			got, err := fc.client.Resource(deployGVR).Namespace(relNS).Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the Deployment is not restored: %v", err)
			}
			if m := got.GetManagedFields(); len(m) != len(tt.wantManagers) || len(m) > 0 && m[0].Manager != "helm" {
				t.Errorf("managed fields %+v, want %+v", m, tt.wantManagers)
			}
		})
	}
}
