package apply

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// kinds the fake cluster serves: GVK, resource, namespaced.
var fakeKinds = []struct {
	gvk        schema.GroupVersionKind
	resource   string
	namespaced bool
}{
	{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, "statefulsets", true},
	{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "deployments", true},
	{schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, "jobs", true},
	{schema.GroupVersionKind{Version: "v1", Kind: "Service"}, "services", true},
	{schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, "pods", true},
	{schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"}, "persistentvolumeclaims", true},
	{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "configmaps", true},
}

// liveObjects is the cluster before the recreate, as YAML documents.
const liveObjects = `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: app-db, namespace: demo, uid: sts-uid}
spec:
  selector: {matchLabels: {app: app-db}}
  volumeClaimTemplates:
    - metadata: {name: data}
      spec: {resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: app-db-0, namespace: demo, labels: {app: app-db}, ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: app-db, uid: sts-uid}]}
---
apiVersion: v1
kind: Pod
metadata: {name: app-db-1, namespace: demo, labels: {app: app-db}, ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: app-db, uid: sts-uid}]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-app-db-0, namespace: demo}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-app-db-1, namespace: demo}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-app-db-other-0, namespace: demo}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: demo, uid: web-uid}
spec:
  selector: {matchLabels: {app: web}}
---
apiVersion: v1
kind: Pod
metadata: {name: web-5d8f-abcde, namespace: demo, labels: {app: web}, ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d8f, uid: rs-uid}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: demo, uid: job-uid}
spec:
  selector: {matchLabels: {batch.kubernetes.io/controller-uid: job-uid}}
---
apiVersion: v1
kind: Pod
metadata: {name: migrate-xyz, namespace: demo, labels: {batch.kubernetes.io/controller-uid: job-uid}, ownerReferences: [{apiVersion: batch/v1, kind: Job, name: migrate, uid: job-uid}]}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: demo, uid: svc-uid}
spec: {clusterIP: 10.96.0.10, type: ClusterIP}
`

// deployedObjects are the objects of liveObjects the release deployed, as
// its manifest has them.
const deployedObjects = `
---
# Source: app/templates/db.yaml
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: app-db}
spec:
  selector: {matchLabels: {app: app-db}}
  volumeClaimTemplates:
    - metadata: {name: data}
      spec: {resources: {requests: {storage: 1Gi}}}
---
# Source: app/templates/web.yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
---
# Source: app/templates/migrate.yaml
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
---
# Source: app/templates/api.yaml
apiVersion: v1
kind: Service
metadata: {name: api}
`

// plannedManifest is the new render, as Helm writes it.
const plannedObjects = `---
# Source: app/templates/db.yaml
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: app-db
spec:
  selector:
    matchLabels:
      app: app-db
  volumeClaimTemplates:
    - metadata:
        name: data
      spec:
        resources:
          requests:
            storage: 2Gi
---
# Source: app/templates/web.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels:
      app: web
      tier: front
---
# Source: app/templates/migrate.yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
spec:
  template:
    spec:
      restartPolicy: Never
---
# Source: app/templates/api.yaml
apiVersion: v1
kind: Service
metadata:
  name: api
spec:
  ipFamilies: [IPv6]
---
# Source: app/templates/gone.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: gone
immutable: true
`

// fakeCluster is a dynamic fake that answers dry-run requests like the API
// server (without changing anything) and records every request.
type fakeCluster struct {
	*live.Cluster
	client *dynamicfake.FakeDynamicClient

	mu sync.Mutex
	// dryRunCreateErr answers dry-run creates (default AlreadyExists);
	// stuck makes real deletes succeed without deleting.
	dryRunCreateErr error
	stuck           bool
	creates         []*unstructured.Unstructured // dry-run creates
	deletes         []clienttesting.DeleteActionImpl
}

func newFakeCluster(t *testing.T) *fakeCluster {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	listKinds := map[schema.GroupVersionResource]string{}
	for _, k := range fakeKinds {
		scope := meta.RESTScopeRoot
		if k.namespaced {
			scope = meta.RESTScopeNamespace
		}
		mapper.AddSpecific(k.gvk, k.gvk.GroupVersion().WithResource(k.resource), k.gvk.GroupVersion().WithResource(strings.ToLower(k.gvk.Kind)), scope)
		listKinds[k.gvk.GroupVersion().WithResource(k.resource)] = k.gvk.Kind + "List"
	}
	var objs []runtime.Object
	for _, doc := range strings.Split(liveObjects, "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	fc := &fakeCluster{client: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...)}
	fc.Cluster = &live.Cluster{Dynamic: fc.client, Mapper: mapper}
	fc.client.PrependReactor("create", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		c := a.(clienttesting.CreateActionImpl)
		if len(c.CreateOptions.DryRun) == 0 {
			return false, nil, nil
		}
		fc.mu.Lock()
		defer fc.mu.Unlock()
		fc.creates = append(fc.creates, c.GetObject().(*unstructured.Unstructured))
		if fc.dryRunCreateErr != nil {
			return true, nil, fc.dryRunCreateErr
		}
		return true, nil, apierrors.NewAlreadyExists(a.GetResource().GroupResource(), "")
	})
	fc.client.PrependReactor("delete", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		d := a.(clienttesting.DeleteActionImpl)
		fc.mu.Lock()
		defer fc.mu.Unlock()
		fc.deletes = append(fc.deletes, d)
		return len(d.DeleteOptions.DryRun) > 0 || fc.stuck, nil, nil
	})
	return fc
}

func (fc *fakeCluster) recreator(out *bytes.Buffer) *recreator {
	return &recreator{cluster: fc.Cluster, out: out, log: func(string, ...interface{}) {}, release: "app", namespace: "demo",
		timeout: 300 * time.Millisecond, poll: 10 * time.Millisecond}
}

func (fc *fakeCluster) exists(t *testing.T, gvr schema.GroupVersionResource, name string) bool {
	t.Helper()
	_, err := fc.client.Resource(gvr).Namespace("demo").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

func TestRecreate(t *testing.T) {
	tests := []struct {
		name       string
		change     plan.Change
		gvr        schema.GroupVersionResource
		wantPolicy metav1.DeletionPropagation
		wantOut    string
	}{
		{
			name:       "StatefulSet orphans its pods and PVCs",
			change:     recreateChange("apps", "StatefulSet", "demo", "app-db"),
			gvr:        schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"},
			wantPolicy: metav1.DeletePropagationOrphan,
			wantOut:    "StatefulSet.apps/demo/app-db: deleted with --cascade=orphan; its 2 pods and 2 PVCs are kept and adopted by the new StatefulSet (existing PVCs keep their spec: volumeClaimTemplates shape only claims created from now on; after the upgrade, the existing claims of templates that request more storage are grown where bound and their StorageClass allows expansion)\n",
		},
		{
			name:       "Deployment deletes its pods first",
			change:     recreateChange("apps", "Deployment", "demo", "web"),
			gvr:        schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
			wantPolicy: metav1.DeletePropagationForeground,
			wantOut:    "Deployment.apps/demo/web: deleted with --cascade=foreground (its ReplicaSets and 1 pod are deleted first), then created by the upgrade: every pod is replaced at once\n",
		},
		{
			name:       "Job runs again",
			change:     recreateChange("batch", "Job", "demo", "migrate"),
			gvr:        schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"},
			wantPolicy: metav1.DeletePropagationForeground,
			wantOut:    "Job.batch/demo/migrate: recreated; the Job runs again (its previous run is deleted first, with its 1 pod)\n",
		},
		{
			name:       "Service gets a new clusterIP",
			change:     recreateChange("", "Service", "demo", "api"),
			gvr:        schema.GroupVersionResource{Version: "v1", Resource: "services"},
			wantPolicy: metav1.DeletePropagationBackground,
			wantOut:    "Service/demo/api: recreated; it gets a new clusterIP (now 10.96.0.10): clients that cached the IP must resolve the name again; connections fail until it is back\n",
		},
		{
			name:    "already gone: the upgrade creates it",
			change:  recreateChange("", "ConfigMap", "demo", "gone"),
			gvr:     schema.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			wantOut: "ConfigMap/demo/gone: not in the cluster any more; the upgrade creates it\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeCluster(t)
			var out bytes.Buffer
			r := fc.recreator(&out)
			targets, err := r.prepare(context.Background(), []plan.Change{tt.change}, plannedObjects)
			if err != nil {
				t.Fatalf("prepare: %v", err)
			}
			// The dry-run create sends the planned object with Helm's metadata.
			if len(fc.creates) != 1 {
				t.Fatalf("%d dry-run creates", len(fc.creates))
			}
			sent := fc.creates[0]
			if sent.GetName() != tt.change.ID.Name || sent.GetNamespace() != "demo" ||
				sent.GetLabels()["app.kubernetes.io/managed-by"] != "Helm" ||
				sent.GetAnnotations()["meta.helm.sh/release-name"] != "app" ||
				sent.GetAnnotations()["meta.helm.sh/release-namespace"] != "demo" {
				t.Errorf("dry-run create sent %v", sent.Object)
			}
			wantDeletes := 0
			if tt.wantPolicy != "" {
				wantDeletes = 1
			}
			if len(fc.deletes) != wantDeletes || (wantDeletes == 1 && len(fc.deletes[0].DeleteOptions.DryRun) == 0) {
				t.Fatalf("before run: deletes %+v, want %d dry-run", fc.deletes, wantDeletes)
			}
			if !fc.exists(t, tt.gvr, tt.change.ID.Name) && wantDeletes == 1 {
				t.Fatal("prepare deleted the object")
			}

			r.announce(targets)
			if out.String() != tt.wantOut {
				t.Errorf("printed\n%q\nwant\n%q", out.String(), tt.wantOut)
			}
			if err := r.run(targets); err != nil {
				t.Fatalf("run: %v", err)
			}
			if fc.exists(t, tt.gvr, tt.change.ID.Name) {
				t.Error("the object still exists")
			}
			if len(fc.deletes) != 2*wantDeletes {
				t.Fatalf("deletes: %+v", fc.deletes)
			}
			if wantDeletes == 0 {
				return
			}
			opts := fc.deletes[1].DeleteOptions
			if len(opts.DryRun) > 0 || opts.PropagationPolicy == nil || *opts.PropagationPolicy != tt.wantPolicy {
				t.Errorf("delete options %+v, want propagation %s", opts, tt.wantPolicy)
			}
			if opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID == "" {
				t.Errorf("delete without a UID precondition: %+v", opts)
			}
		})
	}
}

func TestRecreateFails(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, "app-db",
		field.ErrorList{field.Invalid(field.NewPath("spec", "template", "metadata", "labels"), "x", "`selector` does not match template `labels`")})
	tests := []struct {
		name    string
		change  plan.Change
		setup   func(fc *fakeCluster)
		stage   string // "prepare" or "run"
		wantIs  error
		wantErr string
		// wantDeleted is whether the object is gone afterwards.
		wantDeleted bool
	}{
		{
			name:    "the new object is invalid",
			change:  recreateChange("apps", "StatefulSet", "demo", "app-db"),
			setup:   func(fc *fakeCluster) { fc.dryRunCreateErr = invalid },
			stage:   "prepare",
			wantErr: "StatefulSet.apps/demo/app-db: the new object does not pass the API server's validation (dry-run create), nothing was deleted: StatefulSet.apps \"app-db\" is invalid",
		},
		{
			name:    "not in the planned manifest",
			change:  recreateChange("apps", "StatefulSet", "demo", "other"),
			stage:   "prepare",
			wantIs:  ErrRecreateRefused,
			wantErr: "StatefulSet.apps/demo/other: recreate refused: it is not in the planned manifest",
		},
		{
			name:    "the deletion does not finish",
			change:  recreateChange("apps", "StatefulSet", "demo", "app-db"),
			setup:   func(fc *fakeCluster) { fc.stuck = true },
			stage:   "run",
			wantErr: "StatefulSet.apps/demo/app-db: still present 300ms after deleting it (finalizers [])",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeCluster(t)
			if tt.setup != nil {
				tt.setup(fc)
			}
			r := fc.recreator(&bytes.Buffer{})
			targets, err := r.prepare(context.Background(), []plan.Change{tt.change}, plannedObjects)
			if tt.stage == "run" {
				if err != nil {
					t.Fatalf("prepare: %v", err)
				}
				err = r.run(targets)
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v is not %v", err, tt.wantIs)
			}
			for _, d := range fc.deletes {
				if len(d.DeleteOptions.DryRun) == 0 && tt.stage == "prepare" {
					t.Errorf("prepare sent a real delete: %+v", d)
				}
			}
		})
	}
}

func TestStatefulSetImpactWhenSelectorChanges(t *testing.T) {
	fc := newFakeCluster(t)
	planned := strings.Replace(plannedObjects, "      app: app-db\n", "      app: app-db\n      tier: data\n", 1)
	planned = strings.Replace(planned, "        name: data\n", "        name: storage\n", 1)
	var out bytes.Buffer
	r := fc.recreator(&out)
	targets, err := r.prepare(context.Background(), []plan.Change{recreateChange("apps", "StatefulSet", "demo", "app-db")}, planned)
	if err != nil {
		t.Fatal(err)
	}
	r.announce(targets)
	for _, want := range []string{
		"its 2 pods and 2 PVCs are kept; 2 of the pods do not match the new selector: they stay orphaned and keep the new StatefulSet from creating pods of the same names until deleted",
		"2 PVCs of claim templates the new StatefulSet does not have stay unused",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed %q, want %q", out.String(), want)
		}
	}
}
