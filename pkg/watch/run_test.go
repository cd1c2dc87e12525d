package watch

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/clusterfake"
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
