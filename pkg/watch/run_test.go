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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/clusterfake"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

var deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// fakeCluster is a cluster serving Deployments, pods, claims and events,
// holding objs (Deployments or pods).
func fakeCluster(objs ...*unstructured.Unstructured) *clusterfake.Reader {
	r := clusterfake.NewReader()
	r.AddKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, deploymentsGVR, true)
	for _, o := range objs {
		gvr := live.PodsGVR
		if o.GetKind() == "Deployment" {
			gvr = deploymentsGVR
		}
		r.Put(gvr, o)
	}
	return r
}

func podObj(name, image, waitingReason string) *unstructured.Unstructured {
	cs := map[string]interface{}{"name": "web", "image": image, "ready": waitingReason == "",
		"state": map[string]interface{}{"running": map[string]interface{}{}}}
	phase, ready := "Running", "True"
	if waitingReason != "" {
		cs["state"] = map[string]interface{}{"waiting": map[string]interface{}{"reason": waitingReason, "message": "not found"}}
		phase, ready = "Pending", "False"
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]interface{}{"name": name, "namespace": "ns", "uid": "uid-" + name, "labels": map[string]interface{}{"app": "web"}},
		"status": map[string]interface{}{"phase": phase, "containerStatuses": []interface{}{cs},
			"conditions": []interface{}{map[string]interface{}{"type": "Ready", "status": ready}}},
	}}
}

// deployment is Deployment ns/web at generation with spec and status
// (observed at that generation).
func deployment(generation int64, spec, status map[string]interface{}) *unstructured.Unstructured {
	d := workload("Deployment", spec, nil)
	d.SetNamespace("ns")
	d.SetUID("uid-web")
	d.SetGeneration(generation)
	if status != nil {
		st := runtime.DeepCopyJSON(status)
		st["observedGeneration"] = generation
		d.Object["status"] = st
	}
	return d
}

func webChange(before, after *unstructured.Unstructured) plan.Change {
	return plan.Change{ID: manifest.ObjectID{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web"}, APIVersion: "apps/v1",
		Action: plan.ActionUpdate, Class: plan.ClassRolling, Before: before, After: after}
}

var (
	webSpec = map[string]interface{}{"selector": selector, "replicas": int64(1)}
	rolled  = map[string]interface{}{"replicas": int64(1), "updatedReplicas": int64(1), "readyReplicas": int64(1),
		"availableReplicas": int64(1), "conditions": []interface{}{
			map[string]interface{}{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
			map[string]interface{}{"type": "Available", "status": "True"}}}
)

// TestRun follows a Deployment through the fake cluster: Snapshot LISTs
// the Deployment and its pods before the apply, the apply replaces them,
// Run WATCHes from Snapshot's LISTs and sees the outcome — one LIST and
// one WATCH per resource in all, and no write missed between the two
// (the fake's WATCH replays what changed since the version it starts at,
// as the API server's does).
func TestRun(t *testing.T) {
	stuck := map[string]interface{}{"replicas": int64(2), "updatedReplicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1)}
	tests := []struct {
		name       string
		status     map[string]interface{}
		newPod     *unstructured.Unstructured
		oldGoes    bool
		expire     bool // the API server ends the WATCHes (410 Gone) after the apply
		lean       bool // the plan keeps no live object (change.Before)
		wantState  string
		wantReason string
		wantPred   bool
		wantPods   int // LISTs of pods
	}{
		{"rolled", rolled, podObj("web-new", "nginx:1.26", ""), true, false, false, plan.StateCurrent, "", true, 1},
		{"image cannot be pulled", stuck, podObj("web-new", "nginx:pull-error", "ImagePullBackOff"), false, false, false, plan.StateFailed,
			"pod web-new: image nginx:pull-error cannot be pulled (ImagePullBackOff): not found", false, 1},
		// The pods are LISTed again, and the old one is not counted as
		// kept.
		{"rolled, the WATCH of pods expired", rolled, podObj("web-new", "nginx:1.26", ""), true, true, false, plan.StateCurrent, "", true, 2},
		// The pods before are those of the new object's selector.
		{"rolled, a lean plan", rolled, podObj("web-new", "nginx:1.26", ""), true, false, true, plan.StateCurrent, "", true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := deployment(1, webSpec, nil)
			cluster := fakeCluster(before, podObj("web-old", "nginx:1.25", ""))
			ch := webChange(before, before)
			if tt.lean {
				ch.Before = nil
			}
			w := New(cluster, &plan.Plan{Changes: []plan.Change{ch, {ID: manifest.ObjectID{Kind: "ConfigMap", Name: "same"}, Action: plan.ActionNoop}}})
			w.Refresh = time.Hour // settled by the pods' updates, not by a Refresh
			ctx := context.Background()
			if err := w.Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
			// The apply.
			cluster.Put(deploymentsGVR, deployment(2, webSpec, tt.status))
			cluster.Put(live.PodsGVR, tt.newPod)
			if tt.oldGoes {
				cluster.Delete(live.PodsGVR, "ns", "web-old")
			}
			if tt.expire {
				cluster.ExpireWatches()
			}
			var shown strings.Builder
			out, err := w.Run(ctx, time.Minute, NewProgress(&shown, false, nil))
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Objects) != 1 {
				t.Fatalf("objects %+v, want the Deployment only (a noop is not followed)", out.Objects)
			}
			ob := out.Objects[0]
			if ob.State != tt.wantState || !strings.Contains(ob.Reason, tt.wantReason) || ob.AsPredicted != tt.wantPred || ob.PodsBefore != 1 {
				t.Errorf("outcome %+v, want state %s, reason with %q, as predicted %v, 1 pod before", ob, tt.wantState, tt.wantReason, tt.wantPred)
			}
			if !strings.Contains(shown.String(), "Deployment.apps/ns/web: "+tt.wantState) {
				t.Errorf("progress does not show the Deployment %s:\n%s", tt.wantState, shown.String())
			}
			// Cost: Snapshot's LIST of pods is the watch's (and one more
			// after an expired WATCH); WATCHes may end before they start.
			if lists, watches := cluster.Calls("pods"); lists != tt.wantPods || watches > tt.wantPods {
				t.Errorf("pods: %d LIST + %d WATCH, want %d LIST and at most as many WATCHes", lists, watches, tt.wantPods)
			}
			if lists, watches := cluster.Calls("deployments"); lists != 1 || watches > 1 {
				t.Errorf("deployments: %d LIST + %d WATCH, want 1 LIST and at most 1 WATCH", lists, watches)
			}
		})
	}
}

// lines is a Progress that hands each update's lines to the test.
type lines struct{ seen chan []Line }

func (l *lines) Update(ls []Line, _ time.Duration) { l.seen <- ls }
func (l *lines) Done()                             {}

// next is the next update showing the Deployment's line with want.
func (l *lines) next(t *testing.T, want string) string {
	t.Helper()
	for ls := range l.seen {
		for _, line := range ls {
			if strings.Contains(line.Text, want) {
				return line.Text
			}
		}
	}
	t.Fatalf("progress ended before a line with %q", want)
	return ""
}

// TestAlongsideWaitsForTheApply: while Helm has not applied the change
// yet (the live Deployment is still at the generation Snapshot saw, and
// rolled out), Alongside does not show the old rollout as done; once the
// generation moves it shows the new one.
func TestAlongsideWaitsForTheApply(t *testing.T) {
	oldDone := rolled
	tests := []struct {
		name  string
		apply func(cluster *clusterfake.Reader)
	}{
		{"generation moves", func(cluster *clusterfake.Reader) {
			cluster.Put(deploymentsGVR, deployment(2, webSpec, rolled))
		}},
		// Helm deletes and creates the object (a recreate): another UID
		// at generation 1 again is applied too.
		{"recreated", func(cluster *clusterfake.Reader) {
			d := deployment(1, webSpec, rolled)
			d.SetUID("uid-web-2")
			cluster.Put(deploymentsGVR, d)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := deployment(1, webSpec, oldDone)
			cluster := fakeCluster(before, podObj("web-old", "nginx:1.25", ""))
			after := deployment(1, map[string]interface{}{"selector": selector, "replicas": int64(1), "template": map[string]interface{}{"spec": map[string]interface{}{"containers": []interface{}{map[string]interface{}{"name": "web", "image": "nginx:1.26"}}}}}, nil)
			w := New(cluster, &plan.Plan{Changes: []plan.Change{webChange(before, after)}})
			w.Refresh = time.Hour // lines come from changes only
			ctx, cancel := context.WithCancel(context.Background())
			if err := w.Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
			show := &lines{seen: make(chan []Line)}
			done := make(chan []string)
			go func() { done <- w.Alongside(ctx, show) }()
			first := show.next(t, "")
			if !strings.Contains(first, "waiting for Helm's apply") || strings.Contains(first, "replaced") {
				t.Errorf("before the apply: %q, want it waiting for Helm's apply, not the old rollout's state", first)
			}
			// A controller writing the old object's status is not the apply.
			cluster.Put(deploymentsGVR, deployment(1, webSpec, oldDone))
			if got := show.next(t, ""); !strings.Contains(got, "waiting for Helm's apply") {
				t.Errorf("after a status write: %q, want it still waiting for Helm's apply", got)
			}
			tt.apply(cluster)
			if got := show.next(t, "current"); strings.Contains(got, "waiting") {
				t.Errorf("after the apply: %q", got)
			}
			cancel()
			go func() {
				for range show.seen {
				}
			}()
			if troubles := <-done; len(troubles) != 0 {
				t.Errorf("troubles %q, want none", troubles)
			}
		})
	}
}

// TestRunMismatchSettles: a Deployment current whose pods are not as
// predicted (its old pod kept where the plan said replaced) is reported
// as differing after a Refresh, not followed until the timeout.
func TestRunMismatchSettles(t *testing.T) {
	before := deployment(1, webSpec, nil)
	cluster := fakeCluster(before, podObj("web-old", "nginx:1.25", ""))
	w := New(cluster, &plan.Plan{Changes: []plan.Change{webChange(before, before)}})
	w.Refresh = time.Millisecond
	ctx := context.Background()
	if err := w.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	cluster.Put(deploymentsGVR, deployment(2, webSpec, rolled))
	out, err := w.Run(ctx, time.Hour, NewProgress(&strings.Builder{}, false, nil))
	if err != nil {
		t.Fatal(err)
	}
	if ob := out.Objects[0]; out.TimedOut || ob.State != plan.StateCurrent || ob.AsPredicted || out.Differ != 1 {
		t.Errorf("outcome %+v (timed out %v), want current, differing from the plan", ob, out.TimedOut)
	}
}

// TestWaitPathOneListAndWatch: with Helm's wait (--wait, --atomic) the
// watch follows the Deployment alongside Helm, then after it returns; both
// phases share one LIST+WATCH of it, and Run still sees what changed
// between them.
func TestWaitPathOneListAndWatch(t *testing.T) {
	tests := []struct {
		name string
		// duringWait: the rollout is done while Helm waits; else the
		// Deployment's status is written after Helm returned.
		duringWait bool
	}{
		{"rolled while Helm waited", true},
		{"rolled after Helm returned", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := deployment(1, webSpec, nil)
			cluster := fakeCluster(before, podObj("web-old", "nginx:1.25", ""))
			w := New(cluster, &plan.Plan{Changes: []plan.Change{webChange(before, before)}})
			w.Refresh = time.Hour // settled by updates, not by a Refresh
			ctx := context.Background()
			if err := w.Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			helmWaits, helmReturned := context.WithCancel(ctx)
			show := &lines{seen: make(chan []Line)}
			done := make(chan []string)
			go func() { done <- w.Alongside(helmWaits, show) }()
			show.next(t, "waiting for Helm's apply") // Alongside LISTed the Deployment
			// The apply: a new generation, its pod replaced.
			status := map[string]interface{}(nil)
			if tt.duringWait {
				status = rolled
			}
			cluster.Put(deploymentsGVR, deployment(2, webSpec, status))
			cluster.Put(live.PodsGVR, podObj("web-new", "nginx:1.26", ""))
			cluster.Delete(live.PodsGVR, "ns", "web-old")
			// Alongside saw the apply.
			for want := "in-progress"; ; {
				if tt.duringWait {
					want = "current"
				}
				if !strings.Contains(show.next(t, want), "waiting") {
					break
				}
			}
			helmReturned()
			go func() {
				for range show.seen {
				}
			}()
			if troubles := <-done; len(troubles) != 0 {
				t.Errorf("troubles %q, want none", troubles)
			}
			if !tt.duringWait {
				cluster.Put(deploymentsGVR, deployment(2, webSpec, rolled))
			}
			out, err := w.Run(ctx, time.Minute, NewProgress(&strings.Builder{}, false, nil))
			if err != nil {
				t.Fatal(err)
			}
			if ob := out.Objects[0]; out.TimedOut || ob.State != plan.StateCurrent || !ob.AsPredicted {
				t.Errorf("outcome %+v (timed out %v), want current, as predicted", ob, out.TimedOut)
			}
			// WATCHes may end before they start: at most one.
			for _, resource := range []string{"deployments", "pods"} {
				if lists, watches := cluster.Calls(resource); lists != 1 || watches > 1 {
					t.Errorf("%s: %d LIST + %d WATCH, want 1 LIST and at most 1 WATCH", resource, lists, watches)
				}
			}
		})
	}
}

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
