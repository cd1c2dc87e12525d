package watch

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/clusterfake"
)

// TestRunCreatedClaims: claims the upgrade creates are followed like any
// object (they share the namespace's LIST+WATCH of claims with the
// StatefulSets'): a bound one is current, an unbound one whose
// StorageClass binds on first use is current and says so, and one that
// binds at once but has not is not current when the watch times out.
func TestRunCreatedClaims(t *testing.T) {
	claimsGVK := schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"}
	claim := func(class, phase string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
			"metadata": map[string]interface{}{"name": "uploads", "namespace": "ns", "uid": "uid-uploads"},
			"spec":     map[string]interface{}{"storageClassName": class},
			"status":   map[string]interface{}{"phase": phase}}}
	}
	class := func(name, mode string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
			"metadata": map[string]interface{}{"name": name}, "volumeBindingMode": mode}}
	}
	tests := []struct {
		name       string
		claim      *unstructured.Unstructured
		wantState  string
		wantText   string
		wantTimely bool // settled before the watch's timeout
	}{
		{"bound", claim("", "Bound"), plan.StateCurrent, "", true},
		{"unbound, bound on first use", claim("local", "Pending"), plan.StateCurrent, "binds it when a pod using it is scheduled (WaitForFirstConsumer)", true},
		{"unbound, bound at once", claim("fast", "Pending"), plan.StateInProgress, "StorageClass fast binds at once (Immediate), and has not yet", false},
		{"unbound, no class", claim("", "Pending"), plan.StateInProgress, "no StorageClass", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster := fakeCluster()
			cluster.AddKind(claimsGVK, live.ClaimsGVR, true)
			cluster.Put(live.StorageClassesGVR, class("local", "WaitForFirstConsumer"))
			cluster.Put(live.StorageClassesGVR, class("fast", "Immediate"))
			w := New(cluster, &plan.Plan{Changes: []plan.Change{{ID: manifest.ObjectID{Kind: "PersistentVolumeClaim", Namespace: "ns", Name: "uploads"},
				APIVersion: "v1", Action: plan.ActionCreate, After: tt.claim}}})
			w.Refresh = time.Hour
			ctx := context.Background()
			if err := w.Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
			cluster.Put(live.ClaimsGVR, tt.claim) // Helm's create
			timeout := time.Minute
			if !tt.wantTimely {
				timeout = 200 * time.Millisecond
			}
			out, err := w.Run(ctx, timeout, NewProgress(&strings.Builder{}, false, nil))
			if err != nil {
				t.Fatal(err)
			}
			ob := out.Objects[0]
			if ob.State != tt.wantState || !strings.Contains(ob.Detail+" "+ob.Reason, tt.wantText) || out.TimedOut == tt.wantTimely {
				t.Errorf("outcome %+v (timed out %v), want %s saying %q", ob, out.TimedOut, tt.wantState, tt.wantText)
			}
		})
	}
}

// silent is a Reader whose LISTs go unanswered until their context ends,
// as from an API server that stopped (SIGSTOP).
type silent struct{ *clusterfake.Reader }

func (silent) List(ctx context.Context, _ schema.GroupVersionResource, _ string, _ metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestRunUnanswered: a watch that times out while the API server does not
// answer says so (an *UnansweredError), after the watch's timeout and one
// request's, instead of an outcome blaming the objects.
func TestRunUnanswered(t *testing.T) {
	before := deployment(1, webSpec, nil)
	w := New(silent{fakeCluster(before)}, &plan.Plan{Changes: []plan.Change{webChange(before, before)}})
	w.RequestTimeout = 50 * time.Millisecond
	out, err := w.Run(context.Background(), 50*time.Millisecond, NewProgress(&strings.Builder{}, false, nil))
	var unanswered *UnansweredError
	if !errors.As(err, &unanswered) || !strings.Contains(err.Error(), "the API server stopped answering") || out != nil {
		t.Errorf("outcome %+v, error %v; want none, and an *UnansweredError", out, err)
	}
}

// TestRunKindServedAfterTheApply: a custom resource whose CRD the release
// creates is not served when the watch is made; it is followed once Helm
// returned, not left unknown.
func TestRunKindServedAfterTheApply(t *testing.T) {
	gadgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	cluster := fakeCluster()
	w := New(cluster, &plan.Plan{Changes: []plan.Change{{ID: manifest.ObjectID{Group: "example.com", Kind: "Gadget", Namespace: "ns", Name: "g"},
		APIVersion: "example.com/v1", Action: plan.ActionCreate}}})
	w.Refresh = time.Hour
	ctx := context.Background()
	if err := w.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	// The apply: the CRD, then the custom resource.
	cluster.AddKind(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}, gadgets, true)
	cluster.Put(gadgets, &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "example.com/v1", "kind": "Gadget",
		"metadata": map[string]interface{}{"name": "g", "namespace": "ns", "uid": "uid-g"}}})
	out, err := w.Run(ctx, time.Minute, NewProgress(&strings.Builder{}, false, nil))
	if err != nil {
		t.Fatal(err)
	}
	if ob := out.Objects[0]; ob.State != plan.StateCurrent || out.TimedOut {
		t.Errorf("outcome %+v (timed out %v), want the Gadget current", ob, out.TimedOut)
	}
}

// TestSnapshotReusedReplicaSet: a Deployment whose new template is that of
// an earlier ReplicaSet it owns (a drift reverted) is predicted to keep
// that ReplicaSet's pods, which the controller scales back up, and to
// replace the others; the ReplicaSets are LISTed once, and only for a
// Deployment whose template changes.
func TestSnapshotReusedReplicaSet(t *testing.T) {
	template := func(image, hash string) map[string]interface{} {
		labels := map[string]interface{}{"app": "web"}
		if hash != "" {
			labels[templateHashLabel] = hash
		}
		return map[string]interface{}{"metadata": map[string]interface{}{"labels": labels},
			"spec": map[string]interface{}{"containers": []interface{}{map[string]interface{}{"name": "web", "image": image}}}}
	}
	spec := func(image string) map[string]interface{} {
		return map[string]interface{}{"selector": selector, "replicas": int64(1), "template": template(image, "")}
	}
	replicaSet := func(name, owner, image, hash string) *unstructured.Unstructured {
		rs := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "apps/v1", "kind": "ReplicaSet",
			"metadata": map[string]interface{}{"name": name, "namespace": "ns", "labels": map[string]interface{}{"app": "web", templateHashLabel: hash}},
			"spec":     map[string]interface{}{"selector": selector, "template": template(image, hash)}}}
		yes := true
		rs.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: types.UID(owner), Controller: &yes}})
		return rs
	}
	pod := func(name, hash string) *unstructured.Unstructured {
		p := podObj(name, "", "")
		p.SetLabels(map[string]string{"app": "web", templateHashLabel: hash})
		return p
	}
	tests := []struct {
		name      string
		class     plan.Class
		sets      []*unstructured.Unstructured
		wantLists int
		predicted string
		observed  string
	}{
		{"the earlier ReplicaSet scaled back up", plan.ClassRolling,
			[]*unstructured.Unstructured{replicaSet("web-a", "uid-web", "nginx:1.25", "a"), replicaSet("web-b", "uid-web", "nginx:crash", "b")}, 1,
			"pods of the earlier ReplicaSet web-a kept and scaled back up, the others replaced",
			"1 of 1 pod(s) of ReplicaSet web-a kept, 1 of 1 other(s) replaced"},
		{"no ReplicaSet has the new template", plan.ClassRolling,
			[]*unstructured.Unstructured{replicaSet("web-a", "uid-web", "nginx:1.24", "a"), replicaSet("web-b", "uid-web", "nginx:crash", "b")}, 1,
			"every pod replaced", "1 of 2 pod(s) replaced"},
		{"owned by another Deployment of that name", plan.ClassRolling,
			[]*unstructured.Unstructured{replicaSet("web-a", "uid-other", "nginx:1.25", "a")}, 1,
			"every pod replaced", "1 of 2 pod(s) replaced"},
		{"the template unchanged", plan.ClassInPlace,
			[]*unstructured.Unstructured{replicaSet("web-a", "uid-web", "nginx:1.25", "a")}, 0,
			"no pod replaced", "1 of 2 pod(s) kept"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := deployment(2, spec("nginx:crash"), nil)
			cluster := fakeCluster(before, pod("web-a-1", "a"), pod("web-b-1", "b"))
			for _, rs := range tt.sets {
				cluster.Put(replicaSetsGVR, rs)
			}
			ch := webChange(before, deployment(3, spec("nginx:1.25"), nil))
			ch.Class = tt.class
			w := New(cluster, &plan.Plan{Changes: []plan.Change{ch}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := w.Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
			if lists, _ := cluster.Calls("replicasets"); lists != tt.wantLists {
				t.Errorf("%d LISTs of ReplicaSets, want %d", lists, tt.wantLists)
			}
			// The controller scaled web-a back up and web-b down.
			oo := plan.ObjectOutcome{State: plan.StateCurrent}
			w.targets[0].check(&oo, map[string]*corev1.Pod{"web-a-1": {ObjectMeta: metav1.ObjectMeta{Name: "web-a-1", UID: "uid-web-a-1"}}}, nil, nil)
			if oo.Predicted != tt.predicted || oo.Observed != tt.observed {
				t.Errorf("predicted %q, observed %q; want %q, %q", oo.Predicted, oo.Observed, tt.predicted, tt.observed)
			}
			if want := tt.class == plan.ClassRolling && tt.predicted != "every pod replaced"; oo.AsPredicted != want {
				t.Errorf("as predicted %v, want %v", oo.AsPredicted, want)
			}
		})
	}
}

// TestRunInterrupted (issue 54): a watch whose context ends before its
// timeout (Ctrl-C) is interrupted, not timed out: the object still rolling
// out is not current yet, not failed at a timeout, and no request asks
// whether the API server still answers.
func TestRunInterrupted(t *testing.T) {
	stuck := map[string]interface{}{"replicas": int64(2), "updatedReplicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1)}
	before := deployment(1, webSpec, nil)
	cluster := fakeCluster(before)
	w := New(cluster, &plan.Plan{Changes: []plan.Change{webChange(before, before)}})
	w.Refresh = time.Hour
	if err := w.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	cluster.Put(deploymentsGVR, deployment(2, webSpec, stuck))
	ctx, cancel := context.WithCancel(context.Background())
	out, err := w.Run(ctx, time.Hour, interrupter{NewProgress(&strings.Builder{}, false, nil), cancel})
	if err != nil {
		t.Fatal(err)
	}
	// Not seen to its end: not checked against the prediction either.
	ob := out.Objects[0]
	if !out.Interrupted || out.TimedOut || ob.State != plan.StateInProgress || strings.Contains(ob.Reason, "timed out") ||
		ob.Predicted != "" || out.AsPredicted+out.Differ != 0 {
		t.Errorf("outcome %+v (interrupted %v, timed out %v, %d as predicted, %d differ), want the Deployment not current yet, unchecked, the watch interrupted",
			ob, out.Interrupted, out.TimedOut, out.AsPredicted, out.Differ)
	}
}

// TestRunSaysEachFactOnce (issue 54): a pod the scheduler cannot place,
// before the upgrade and after, with its FailedScheduling event: the
// reason quotes the scheduler's message once (the pod's condition), not
// again for the event or for "not ready before the upgrade either"; and
// another workload's pod's event is not this workload's reason.
func TestRunSaysEachFactOnce(t *testing.T) {
	const msg = "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."
	unschedulable := podObj("web-0", "nginx:1.25", "")
	unschedulable.Object["status"] = map[string]interface{}{"phase": "Pending", "conditions": []interface{}{
		map[string]interface{}{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": msg + " not found"}}}
	event := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Event",
		"metadata": map[string]interface{}{"name": "web-0.1", "namespace": "ns", "uid": "uid-ev"},
		"type":     "Warning", "reason": "FailedScheduling", "message": msg, "lastTimestamp": "2026-12-05T12:00:00Z",
		"involvedObject": map[string]interface{}{"kind": "Pod", "name": "web-0", "namespace": "ns"}}}
	before := deployment(1, webSpec, nil)
	cluster := fakeCluster(before, unschedulable)
	cluster.Put(live.EventsGVR, event)
	// Another workload's pod, in the same namespace: not this one's reason.
	other := event.DeepCopy()
	other.SetName("db-0.1")
	other.Object["message"] = "0/3 nodes are available: 3 Insufficient cpu."
	other.Object["lastTimestamp"] = "2026-12-05T12:01:00Z"
	other.Object["involvedObject"] = map[string]interface{}{"kind": "Pod", "name": "db-0", "namespace": "ns"}
	cluster.Put(live.EventsGVR, other)
	db := unschedulable.DeepCopy()
	db.SetName("db-0")
	db.SetUID("uid-db-0")
	db.SetLabels(map[string]string{"app": "db"})
	cluster.Put(live.PodsGVR, db)
	w := New(cluster, &plan.Plan{Changes: []plan.Change{webChange(before, before)}})
	w.Refresh = time.Hour
	if err := w.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	cluster.Put(deploymentsGVR, deployment(2, webSpec, map[string]interface{}{"replicas": int64(1), "updatedReplicas": int64(1)}))
	// Ctrl-C once the watch showed what it saw: the pods' reasons.
	ctx, cancel := context.WithCancel(context.Background())
	out, err := w.Run(ctx, time.Hour, interrupter{NewProgress(&strings.Builder{}, false, nil), cancel})
	if err != nil {
		t.Fatal(err)
	}
	reason := out.Objects[0].Reason
	if n := strings.Count(reason, msg); n != 1 || !strings.Contains(reason, "not ready before the upgrade either, for the same reason") || strings.Contains(reason, "db-0") {
		t.Errorf("reason quotes the scheduler %d time(s), want once and \"for the same reason\": %q", n, reason)
	}
}

// interrupter is a Progress that cancels the watch at its first update:
// a Ctrl-C once the objects were seen.
type interrupter struct {
	Progress
	cancel context.CancelFunc
}

func (i interrupter) Update(lines []Line, elapsed time.Duration) {
	i.Progress.Update(lines, elapsed)
	i.cancel()
}
