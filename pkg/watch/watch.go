// Package watch is the stage after apply: it follows every object the plan
// created or changed until it is current (kstatus, the status rules Flux and
// Helm 4's --wait use) or has failed, says why a workload fails in words
// (from its pods' status and events), and checks what the plan predicted of
// its pods and claims against what happened (their UIDs before the apply and
// after the watch).
//
// Cost: one LIST+WATCH of pods per namespace holding workloads (and of
// claims, with StatefulSets), the LIST before the apply and the WATCH from
// it until the watch ends; one LIST+WATCH per kind and namespace of the
// objects followed, from when the watch starts following them (alongside
// Helm's wait with --wait or --atomic, else after Helm returns) until it
// ends; one LIST of events per namespace where
// something failed; one GET of a log per workload whose container
// crashed; one LIST of StorageClasses when a claim followed is unbound;
// one LIST of a Deployment's ReplicaSets per revision when a pod it had
// before the apply has a problem (is it of the new revision?); one LIST of
// one object when the watch times out (does the API server answer?). A
// WATCH the API server ends is started again from the last version seen
// (client-go's RetryWatcher), a LIST again when that version is gone
// (410). Watcher.Requests counts them.
//
// Its judgement of one object, Check, is the status verb's too. The files:
// watch.go the Watcher and what it reads before the apply, target.go what
// it knows of each object followed, follow.go the LIST and WATCH of each
// group (client-go's watch tools over live.Reader), requests.go their
// count, feed.go the updates they queue and the state they keep, run.go
// the loop that evaluates the objects on each update (Alongside, Run),
// health.go the judgement, reasons.go a pod's problems in words,
// revision.go which pods are of the new revision, claims.go unbound
// claims, predict.go what the plan predicted against what happened,
// progress.go the display.
package watch

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// Watcher follows the objects of one applied plan.
type Watcher struct {
	reader  live.Reader
	targets []*target
	// views are the pods and claims of each namespace followed, as
	// Snapshot LISTed them before the apply and its WATCHes (kept open
	// until Run ends or Stop) changed them since; pods the same as typed
	// pods. objs are the objects followed, by group and name, and failed
	// the groups that cannot be followed. Only the goroutine of Snapshot,
	// Alongside and Run reads and writes them, from the updates feed
	// queued.
	views  map[groupKey]*view
	pods   map[string]map[string]*corev1.Pod
	objs   map[groupKey]map[string]*unstructured.Unstructured
	failed map[groupKey]error
	feed   *feed
	// life is the context of every group's LIST+WATCH, from Snapshot (or
	// the first follow) until Run ends or Stop, so that Alongside and Run
	// share one LIST+WATCH per group; following are the groups started.
	life      context.Context
	stop      context.CancelFunc
	following map[groupKey]bool
	// claimsBefore are the claims of each namespace with a StatefulSet
	// followed, by name, read by Snapshot.
	claimsBefore map[string]map[string]types.UID
	// Refresh is how often progress is shown again with no change (the
	// elapsed time of each line); 0: one second.
	Refresh time.Duration
	// RequestTimeout bounds each request Run sends after its timeout
	// (events, logs, whether the API server answers); 0: only the
	// client's own bound.
	RequestTimeout time.Duration
	// requests counts the LISTs and WATCHes sent, per resource (Requests).
	requests requestCount
	// classes are the cluster's StorageClasses' binding modes, by name,
	// LISTed once when an unbound claim is followed (see unboundClaim).
	classes *storageClasses
	// newSets are the pod-template-hash of each Deployment's newest
	// ReplicaSet, by Deployment UID and revision (see newReplicaSetHash).
	newSets map[string]string
}

// New returns the watcher of the objects p creates or updates (noops,
// deletions, and CRDs the user applies by hand are not followed), read
// through r.
func New(r live.Reader, p *plan.Plan) *Watcher {
	w := &Watcher{reader: r, views: map[groupKey]*view{}, pods: map[string]map[string]*corev1.Pod{},
		objs: map[groupKey]map[string]*unstructured.Unstructured{}, failed: map[groupKey]error{}, claimsBefore: map[string]map[string]types.UID{}}
	for i := range p.Changes {
		ch := &p.Changes[i]
		if ch.Action != plan.ActionCreate && ch.Action != plan.ActionUpdate || ch.Class == plan.ClassManual || ch.Class == plan.ClassInvalid {
			continue
		}
		gv, err := schema.ParseGroupVersion(ch.APIVersion)
		if err != nil {
			continue
		}
		t := &target{change: ch, gvk: gv.WithKind(ch.ID.Kind)}
		t.expect = expect(t)
		w.mapTarget(t)
		w.targets = append(w.targets, t)
	}
	return w
}

// mapTarget finds the resource that serves t's kind; when none does (its
// CRD not there yet) t's status says why.
func (w *Watcher) mapTarget(t *target) {
	gvr, namespaced, err := w.reader.Mapping(t.gvk)
	if err != nil {
		t.last = status{state: plan.StateUnknown, reason: err.Error()}
		return
	}
	t.group, t.last = groupKey{gvr: gvr}, status{}
	if namespaced {
		t.group.ns = t.change.ID.Namespace
	}
}

// Empty reports whether there is nothing to follow.
func (w *Watcher) Empty() bool { return len(w.targets) == 0 }

// Snapshot LISTs, before the apply, the pods of the workloads followed
// and the claims of the StatefulSets (what the outcome compares with), and
// WATCHes them from there until Run ends or Stop: the watch's only LIST of
// them, so that a pod replaced while Helm applies is seen replaced.
func (w *Watcher) Snapshot(ctx context.Context) error {
	w.start(ctx)
	for _, k := range w.podGroups() {
		// A LIST that fails leaves the groups listed followed, and the
		// others to follow's own LIST.
		v, err := w.list(w.life, k, nil)
		if err != nil {
			return fmt.Errorf("reading the %s of namespace %s before the apply: %w", k.gvr.Resource, k.ns, err)
		}
		w.views[k] = v
		if k.gvr == live.PodsGVR {
			w.pods[k.ns] = toPods(v.objs)
		}
		w.followInto(k, nil, v.rv)
	}
	sets := map[string][]unstructured.Unstructured{} // ReplicaSets, per namespace
	for _, t := range w.targets {
		ns := t.change.ID.Namespace
		t.before = baselineOf(t.change.Before)
		if pods := w.views[groupKey{live.PodsGVR, ns}]; pods != nil && t.workload() && t.change.Action == plan.ActionUpdate {
			// The live selector; a lean plan keeps no live object, and
			// the new one's is the same (a workload's selector cannot
			// change in place).
			sel := selectorOf(t.change.Before)
			if t.change.Before == nil {
				sel = selectorOf(t.change.After)
			}
			t.podsBefore = map[string]types.UID{}
			var mine []*corev1.Pod
			for _, p := range pods.objs {
				if p.GetDeletionTimestamp() == nil && sel != nil && sel.Matches(labels.Set(p.GetLabels())) {
					t.podsBefore[p.GetName()] = p.GetUID()
					if pod := w.pods[ns][p.GetName()]; pod != nil {
						mine = append(mine, pod)
					}
				}
			}
			t.unreadyBefore = unreadyBefore(mine)
			if t.gvk.Kind == "Deployment" && t.change.Class == plan.ClassRolling && t.expect.kind == expectReplaced {
				w.expectReused(ctx, t, sets, mine)
			}
		}
		if claims := w.views[groupKey{live.ClaimsGVR, ns}]; claims != nil && t.gvk.Kind == "StatefulSet" {
			w.claimsBefore[ns] = uids(claims.objs)
		}
	}
	for k, v := range w.views {
		w.baselines(k, v.objs) // the chart's own claims and pods
	}
	return nil
}

// Stop ends the WATCHes Snapshot, Alongside and Run started (Run stops
// them when it ends); for a run that ends before Run. Nil-safe.
func (w *Watcher) Stop() {
	if w != nil && w.stop != nil {
		w.stop()
	}
}
