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
// WATCH the API server ends is started again, a LIST again when its
// version is gone (410). Watcher.Requests counts them.
package watch

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kwatch "k8s.io/apimachinery/pkg/watch"

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

// view is a group's objects by name as of resource version rv.
type view struct {
	objs map[string]*unstructured.Unstructured
	rv   string
}

// requestCount counts LISTs and WATCHes per resource, from the goroutines
// that follow the groups.
type requestCount struct {
	mu    sync.Mutex
	count map[string]*[2]int // resource → LISTs, WATCHes
}

func (r *requestCount) add(gvr schema.GroupVersionResource, watch bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.count == nil {
		r.count = map[string]*[2]int{}
	}
	name := gvr.GroupResource().String()
	if r.count[name] == nil {
		r.count[name] = &[2]int{}
	}
	if watch {
		r.count[name][1]++
	} else {
		r.count[name][0]++
	}
}

// String says how many LISTs and WATCHes were sent, per resource:
// "configmaps 1 LIST + 1 WATCH, pods 1 LIST + 1 WATCH".
func (r *requestCount) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.count))
	for n := range r.count {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		c := r.count[n]
		parts[i] = fmt.Sprintf("%s %d LIST + %d WATCH", n, c[0], c[1])
	}
	return strings.Join(parts, ", ")
}

// Requests says how many LISTs and WATCHes the watch sent so far, per
// resource, Snapshot's included (see requestCount.String): what its cost
// is measured by.
func (w *Watcher) Requests() string { return w.requests.String() }

// target is one object followed.
type target struct {
	change *plan.Change
	gvk    schema.GroupVersionKind
	// group is the LIST+WATCH the object is followed by; its gvr is empty
	// when the kind is not served (last says why).
	group  groupKey
	expect expectation
	// podsBefore are the pods its selector (as it was live) matched before
	// the apply, by name.
	podsBefore map[string]types.UID
	// unreadyBefore says how the workload was not ready before the
	// upgrade ("" when it was, or nothing told): a rollout that does not
	// become ready is not only the upgrade's doing.
	unreadyBefore string
	// before is the object as it was live before the apply (nil: it was
	// not there, or not read); applied becomes true once the watch saw
	// Helm's apply reach it (see appliedIn).
	before  *baseline
	applied bool
	// last is its status at the last evaluation; shown is true once it
	// has a progress line; trouble is the last status that said something
	// was wrong (see Alongside).
	last    status
	shown   bool
	trouble *status
}

// baseline is what tells an object Helm has not written yet from one it
// has: its UID, generation and resource version before the apply.
type baseline struct {
	uid             types.UID
	generation      int64
	resourceVersion string
}

func (t *target) workload() bool { return workloadKinds[t.gvk.GroupKind()] }

var workloadKinds = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "Deployment"}:  true,
	{Group: "apps", Kind: "StatefulSet"}: true,
	{Group: "apps", Kind: "DaemonSet"}:   true,
	{Group: "apps", Kind: "ReplicaSet"}:  true,
	{Group: "batch", Kind: "Job"}:        true,
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

// groups are the LIST+WATCHes that follow the targets, one per resource
// and namespace, with the names of each.
func (w *Watcher) groups() map[groupKey]map[string]bool {
	groups := map[groupKey]map[string]bool{}
	for _, t := range w.targets {
		if t.group.gvr.Resource == "" {
			continue
		}
		if groups[t.group] == nil {
			groups[t.group] = map[string]bool{}
		}
		groups[t.group][t.change.ID.Name] = true
	}
	return groups
}

// podGroups are the LIST+WATCHes Snapshot starts: of pods in each
// namespace holding workloads, of claims in each holding StatefulSets.
func (w *Watcher) podGroups() []groupKey {
	seen := map[groupKey]bool{}
	var out []groupKey
	add := func(k groupKey) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	for _, t := range w.targets {
		if t.workload() {
			add(groupKey{live.PodsGVR, t.change.ID.Namespace})
		}
		if t.gvk.Kind == "StatefulSet" {
			add(groupKey{live.ClaimsGVR, t.change.ID.Namespace})
		}
	}
	return out
}

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

// expectReused makes t's expectation, a Deployment whose template
// changes, that of an earlier ReplicaSet scaled back up when one has the
// template applied (a drift reverted) and pods: those among mine, t's
// pods before the apply, are kept. The ReplicaSets of t's namespace are
// LISTed once, into sets; a LIST that fails leaves every pod replaced.
func (w *Watcher) expectReused(ctx context.Context, t *target, sets map[string][]unstructured.Unstructured, mine []*corev1.Pod) {
	ns := t.change.ID.Namespace
	list, ok := sets[ns]
	if !ok {
		w.requests.add(replicaSetsGVR, false)
		if got, err := w.reader.List(ctx, replicaSetsGVR, ns, metav1.ListOptions{}); err == nil {
			list = got.Items
		}
		sets[ns] = list
	}
	name, hash := reusedReplicaSet(t, list)
	kept := map[string]bool{}
	for _, p := range mine {
		if name != "" && hash != "" && p.Labels[templateHashLabel] == hash {
			kept[p.Name] = true
		}
	}
	if len(kept) > 0 { // scaled down to none, it brings new pods only
		t.expect.kind, t.expect.reused, t.expect.reusedPods = expectReused, name, kept
	}
}

// start begins the life of the watch's LIST+WATCHes, under ctx, with no
// group followed yet.
func (w *Watcher) start(ctx context.Context) {
	w.life, w.stop = context.WithCancel(ctx)
	w.feed = &feed{notify: make(chan struct{}, 1)}
	w.following = map[groupKey]bool{}
}

// followInto follows group k (only names, when given) from resource
// version from ("": after a LIST) into the feed, until Run ends or Stop.
func (w *Watcher) followInto(k groupKey, names map[string]bool, from string) {
	w.following[k] = true
	life, feed := w.life, w.feed
	go followGroup(life, w.reader, k, names, from, func(u update) bool { feed.put(u); return life.Err() == nil }, &w.requests)
}

// Stop ends the WATCHes Snapshot, Alongside and Run started (Run stops
// them when it ends); for a run that ends before Run. Nil-safe.
func (w *Watcher) Stop() {
	if w != nil && w.stop != nil {
		w.stop()
	}
}

// feed queues the updates of the WATCHes Snapshot started, without bound
// (Helm may apply for minutes with no one reading them), for the next
// follow to take.
type feed struct {
	mu     sync.Mutex
	queue  []update
	notify chan struct{}
}

func (f *feed) put(u update) {
	f.mu.Lock()
	f.queue = append(f.queue, u)
	f.mu.Unlock()
	select {
	case f.notify <- struct{}{}:
	default:
	}
}

func (f *feed) take() []update {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queue
	f.queue = nil
	return q
}

// applyFeed applies the updates queued: pods and claims to the views and
// pods, the objects followed to objs (recording, while Helm may not have
// applied yet, their baselines from the first LIST), and the groups that
// cannot be followed to failed.
func (w *Watcher) applyFeed(beforeApply bool) {
	for _, u := range w.feed.take() {
		k := u.group
		switch {
		case u.err != nil:
			w.failed[k] = u.err
		case k.gvr == live.PodsGVR || k.gvr == live.ClaimsGVR:
			w.applyPodUpdate(u, beforeApply)
		case u.listed:
			w.objs[k] = u.list
			if beforeApply {
				w.baselines(k, u.list)
			}
		case u.obj != nil:
			if w.objs[k] == nil {
				w.objs[k] = map[string]*unstructured.Unstructured{}
			}
			if u.deleted {
				delete(w.objs[k], u.obj.GetName())
			} else {
				w.objs[k][u.obj.GetName()] = u.obj
			}
		}
	}
}

// objectsOf are the objects of group k as last seen, by name: pods and
// claims (a chart's own claims and pods too) from their views, which
// Snapshot's LIST and the WATCH from it keep, the others from objs.
func (w *Watcher) objectsOf(k groupKey) map[string]*unstructured.Unstructured {
	if k.gvr == live.PodsGVR || k.gvr == live.ClaimsGVR {
		if v := w.views[k]; v != nil {
			return v.objs
		}
		return nil
	}
	return w.objs[k]
}

// pending is how many groups followed have not been LISTed yet (nor
// found unfollowable).
func (w *Watcher) pending() int {
	n := 0
	for k := range w.following {
		listed := w.objs[k] != nil
		if k.gvr == live.PodsGVR || k.gvr == live.ClaimsGVR {
			listed = w.views[k] != nil
		}
		if !listed && w.failed[k] == nil {
			n++
		}
	}
	return n
}

// applyPodUpdate applies an update of pods or claims to the views (and
// pods), recording, while Helm may not have applied yet, the baselines of
// the claims and pods followed from the first LIST.
func (w *Watcher) applyPodUpdate(u update, beforeApply bool) {
	v := w.views[u.group]
	if v == nil {
		v = &view{objs: map[string]*unstructured.Unstructured{}}
		w.views[u.group] = v
	}
	if u.rv != "" {
		v.rv = u.rv
	}
	switch {
	case u.listed:
		v.objs = u.list
		if u.group.gvr == live.PodsGVR {
			w.pods[u.group.ns] = toPods(u.list)
		}
		if beforeApply {
			w.baselines(u.group, u.list)
		}
	case u.obj != nil:
		name := u.obj.GetName()
		if u.deleted {
			delete(v.objs, name)
		} else {
			v.objs[name] = u.obj
		}
		if u.group.gvr == live.PodsGVR {
			if w.pods[u.group.ns] == nil {
				w.pods[u.group.ns] = map[string]*corev1.Pod{}
			}
			if p, err := toPod(u.obj); err == nil && !u.deleted {
				w.pods[u.group.ns][name] = p
			} else {
				delete(w.pods[u.group.ns], name)
			}
		}
	}
}

func baselineOf(o *unstructured.Unstructured) *baseline {
	if o == nil {
		return nil
	}
	return &baseline{uid: o.GetUID(), generation: o.GetGeneration(), resourceVersion: o.GetResourceVersion()}
}

// appliedIn reports whether obj, t's live object, is past its baseline:
// another object (recreated), a later generation, or, for a change that
// leaves the spec as it is (no generation moves), any later write.
func (t *target) appliedIn(obj *unstructured.Unstructured) bool {
	b := t.before
	switch {
	case b == nil || obj == nil:
		return true // created, or deleted to be created again: Helm is at it
	case obj.GetUID() != b.uid || obj.GetGeneration() > b.generation:
		return true
	case b.generation > 0 && specChanged(t.change):
		// A controller writing the status changes the resource version,
		// not the generation.
		return false
	}
	return obj.GetResourceVersion() != b.resourceVersion
}

// list is one LIST of group k (only names, when given).
func (w *Watcher) list(ctx context.Context, k groupKey, names map[string]bool) (*view, error) {
	w.requests.add(k.gvr, false)
	list, err := w.reader.List(ctx, k.gvr, k.ns, listOptions(names))
	if err != nil {
		return nil, err
	}
	v := &view{objs: make(map[string]*unstructured.Unstructured, len(list.Items)), rv: list.GetResourceVersion()}
	for i := range list.Items {
		if o := &list.Items[i]; names == nil || names[o.GetName()] {
			v.objs[o.GetName()] = o
		}
	}
	return v, nil
}

// listOptions selects the one name of a group by field, so that a
// Deployment alone in its namespace does not LIST and WATCH every other.
func listOptions(names map[string]bool) metav1.ListOptions {
	opts := metav1.ListOptions{}
	if len(names) == 1 {
		for n := range names {
			opts.FieldSelector = "metadata.name=" + n
		}
	}
	return opts
}

// groupKey is one LIST+WATCH of followed objects.
type groupKey struct {
	gvr schema.GroupVersionResource
	ns  string
}

// update is what one LIST or WATCH event says of a group.
type update struct {
	group groupKey
	// listed: a LIST, whose objects (list) replace the group's; else obj
	// is one object a WATCH saw changed (or deleted).
	listed  bool
	list    map[string]*unstructured.Unstructured
	obj     *unstructured.Unstructured
	deleted bool
	// rv is the resource version the group is current at after it; ""
	// when unknown.
	rv string
	// err: the group cannot be followed.
	err error
}

// Run follows the objects until each is current or failed, or timeout
// passes, showing progress on show, and returns the outcome. The error is
// for the watch itself (not for a failed rollout, which the outcome says):
// an *UnansweredError when, at the timeout, the API server does not answer
// one request within RequestTimeout, since what the watch last saw then
// says nothing of the rollout.
func (w *Watcher) Run(ctx context.Context, timeout time.Duration, show Progress) (*plan.Outcome, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pods, timedOut := w.follow(ctx, start, show, false)
	w.Stop()
	// What follows the watch's own deadline is bounded by one request's.
	after, cancelAfter := w.requestContext(ctx)
	defer cancelAfter()
	if timedOut {
		if err := w.answering(after); err != nil {
			return nil, &UnansweredError{Err: err, After: time.Since(start)}
		}
	}
	out := w.outcome(after, pods, time.Since(start), timedOut)
	return out, nil
}

// UnansweredError is a watch that timed out while the API server did not
// answer: the rollout's state is not known.
type UnansweredError struct {
	Err error
	// After is how long the watch ran.
	After time.Duration
}

func (e *UnansweredError) Error() string {
	return fmt.Sprintf("the API server stopped answering during the rollout watch, which ended after %s: %v", e.After.Round(time.Second), e.Err)
}

func (e *UnansweredError) Unwrap() error { return e.Err }

// requestContext is ctx without its cancellation, bounded by
// RequestTimeout when set: for the requests after the watch's deadline.
func (w *Watcher) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx = context.WithoutCancel(ctx)
	if w.RequestTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, w.RequestTimeout)
}

// answering asks the API server for one object of a group followed, and
// returns why it did not answer (nil when it did, with an object or an
// error of its own: a server that refuses still answers).
func (w *Watcher) answering(ctx context.Context) error {
	k := groupKey{gvr: live.PodsGVR}
	for _, t := range w.targets {
		if t.group.gvr.Resource != "" {
			k = t.group
			break
		}
	}
	w.requests.add(k.gvr, false)
	_, err := w.reader.List(ctx, k.gvr, k.ns, metav1.ListOptions{Limit: 1})
	var status apierrors.APIStatus
	if err == nil || errors.As(err, &status) && !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err) && !apierrors.IsServiceUnavailable(err) {
		return nil
	}
	return err
}

// Alongside follows the objects while Helm still applies and waits (--wait,
// --atomic), until ctx is done, showing progress on show; it does not end
// when they settle, since Helm may not have changed them yet, and an
// object Helm has not written yet (see appliedIn) is shown waiting for it,
// not in its old state. It returns what it last saw wrong with each
// object it saw failing or stuck (a pod's problem, a Failed condition), as
// `ID state: detail — reason` lines, even when the object was fine again
// later (Helm's --atomic rolled it back): what Helm's own wait error does
// not say. Nil when it saw nothing wrong.
func (w *Watcher) Alongside(ctx context.Context, show Progress) []string {
	w.follow(ctx, time.Now(), show, true)
	var out []string
	for _, t := range w.targets {
		if t.trouble != nil {
			out = append(out, t.change.ID.String()+" "+t.trouble.line())
		}
		t.trouble, t.last, t.shown = nil, status{}, false // Run starts afresh
	}
	return out
}

// follow LISTs and WATCHes the objects (each group once for the
// watcher's life: Alongside's are Run's), and takes the pods and claims
// from the WATCHes Snapshot started, evaluating each target on every
// change and every Refresh, until ctx is done (timedOut) or, after the
// apply, every target is settled; beforeApply: Helm may not have applied
// yet (Alongside). It returns the last view of the pods, by namespace and
// name.
func (w *Watcher) follow(ctx context.Context, start time.Time, show Progress, beforeApply bool) (pods map[string]map[string]*corev1.Pod, timedOut bool) {
	if w.life == nil || w.life.Err() != nil {
		// No Snapshot, or its life ended: the groups start afresh.
		w.start(ctx)
	}
	if !beforeApply {
		// A kind not served before the apply may be now: the release
		// created its CRD.
		for _, t := range w.targets {
			if t.group.gvr.Resource == "" {
				w.mapTarget(t)
			}
		}
	}
	// Pods and claims first: a claim the chart holds shares its
	// namespace's LIST+WATCH of claims with the StatefulSets'.
	for _, k := range w.podGroups() {
		if !w.following[k] {
			w.followInto(k, nil, "") // Snapshot failed: LISTed here
		}
	}
	for k, names := range w.groups() {
		if !w.following[k] {
			w.followInto(k, names, "")
		}
	}
	refresh := w.Refresh
	if refresh <= 0 {
		refresh = time.Second
	}
	tick := time.NewTicker(refresh)
	defer tick.Stop()
	// The pods come from their own WATCH, a few milliseconds behind the
	// objects' at times: an object current while its pods are not as
	// predicted (unconfirmed) is settled only once a whole Refresh passed
	// so (ticked) with no pod update to change that.
	ticked, unconfirmed := false, false
loop:
	for {
		// Evaluated once the first LISTs are in; at once when Alongside
		// saw them, since nothing may change any more.
		w.applyFeed(beforeApply)
		if w.pending() == 0 {
			var settled bool
			settled, unconfirmed = w.evaluate(w.pods, w.failed, show, time.Since(start), beforeApply)
			if settled && !beforeApply && (!unconfirmed || ticked) {
				break
			}
		}
		ticked = false
		select {
		case <-w.feed.notify:
		case <-tick.C:
			ticked = unconfirmed // a whole Refresh with it unconfirmed
		case <-ctx.Done():
			timedOut = true
			break loop
		}
	}
	w.applyFeed(beforeApply)
	if timedOut && w.pending() > 0 {
		// Never listed: say so rather than leave them "in progress".
		for _, t := range w.targets {
			if t.last.state == "" {
				t.last = status{state: plan.StateInProgress, reason: "not observed before the watch timed out"}
			}
		}
	}
	show.Done()
	return w.pods, timedOut
}

// baselines records, from the first LIST of group k (Alongside starts
// before Helm's apply), what its targets were just before the apply: the
// plan's live object may be older, or lack a generation (a lean plan). An
// object already past the plan's is applied.
func (w *Watcher) baselines(k groupKey, list map[string]*unstructured.Unstructured) {
	for _, t := range w.targets {
		obj := list[t.change.ID.Name]
		if t.group != k || t.applied || obj == nil {
			continue
		}
		if b := t.before; b != nil && (b.uid != "" && obj.GetUID() != b.uid || b.generation > 0 && obj.GetGeneration() > b.generation) {
			t.applied = true
			continue
		}
		t.before = baselineOf(obj)
	}
}

// evaluate computes every target's status, shows them, and reports
// whether all are settled (current, failed or unknown), and whether a
// current one's pods are not as predicted (yet). beforeApply: a
// target whose live object is not past its baseline yet is waiting for
// Helm's apply.
func (w *Watcher) evaluate(pods map[string]map[string]*corev1.Pod,
	failedGroups map[groupKey]error, show Progress, elapsed time.Duration, beforeApply bool) (settled, unconfirmed bool) {
	settled = true
	lines := make([]Line, 0, len(w.targets))
	for _, t := range w.targets {
		obj := w.objectsOf(t.group)[t.change.ID.Name]
		switch {
		case t.group.gvr.Resource == "":
			// Not mapped: t.last says why.
		case failedGroups[t.group] != nil:
			t.last = status{state: plan.StateUnknown, reason: "cannot watch: " + failedGroups[t.group].Error()}
		case beforeApply && !t.applied && !t.appliedIn(obj):
			t.last = status{state: plan.StateInProgress, detail: "waiting for Helm's apply", reason: "live: " + t.before.String()}
		case t.group.gvr == live.ClaimsGVR && unbound(obj):
			t.applied = t.applied || beforeApply
			t.last = unboundClaim(obj, w.bindingMode)
		default:
			t.applied = t.applied || beforeApply
			t.last = evaluate(t, obj, podList(pods[t.change.ID.Namespace]), w.revision(t, obj))
		}
		if t.last.trouble {
			last := t.last
			t.trouble = &last
		}
		if t.last.state == plan.StateInProgress {
			settled = false
		}
		if t.last.state == plan.StateCurrent && t.expect.kind != expectNone {
			var oo plan.ObjectOutcome
			oo.State = t.last.state
			t.check(&oo, pods[t.change.ID.Namespace], nil, nil)
			unconfirmed = unconfirmed || !oo.AsPredicted
		}
		// One line per workload, and per other object while it is not
		// current: a ConfigMap that was current at once needs none. Once
		// shown, a line stays (a terminal's lines are redrawn in place).
		if t.shown = t.shown || t.workload() || t.last.state != plan.StateCurrent; t.shown {
			lines = append(lines, Line{ID: t.change.ID.String(), State: t.last.state, Text: t.last.line()})
		}
	}
	show.Update(lines, elapsed)
	return settled, unconfirmed
}

func (b *baseline) String() string {
	if b.generation > 0 {
		return fmt.Sprintf("generation %d, as before the upgrade", b.generation)
	}
	return "as before the upgrade"
}

func podList(m map[string]*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(m))
	for _, p := range m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// followGroup WATCHes the objects of k (only names, when given) from
// resource version from, after a LIST when from is "", handing each to
// send, until ctx is done or send returns false; a WATCH that ends is started again from the
// last version seen, a LIST again when that version is gone.
func followGroup(ctx context.Context, r live.Reader, k groupKey, names map[string]bool, from string, send func(update) bool, count *requestCount) {
	opts := listOptions(names)
	keep := func(o *unstructured.Unstructured) bool { return names == nil || names[o.GetName()] }
	rv, listed := from, from != ""
	for ctx.Err() == nil {
		if rv == "" {
			count.add(k.gvr, false)
			list, err := r.List(ctx, k.gvr, k.ns, opts)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				if !listed && (apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err)) {
					send(update{group: k, err: err})
					return
				}
				if !sleep(ctx, time.Second) {
					return
				}
				continue
			}
			objs := make(map[string]*unstructured.Unstructured, len(list.Items))
			for i := range list.Items {
				if o := &list.Items[i]; keep(o) {
					objs[o.GetName()] = o
				}
			}
			rv, listed = list.GetResourceVersion(), true
			if !send(update{group: k, listed: true, list: objs, rv: rv}) {
				return
			}
		}
		wopts := opts
		wopts.ResourceVersion, wopts.AllowWatchBookmarks = rv, true
		count.add(k.gvr, true)
		wi, err := r.Watch(ctx, k.gvr, k.ns, wopts)
		if err != nil {
			if ctx.Err() != nil || !sleep(ctx, time.Second) {
				return
			}
			rv = "" // LIST again: the version may be gone
			continue
		}
		gone, done := watchEvents(ctx, wi, func(ev kwatch.Event) bool {
			o, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				return true
			}
			rv = o.GetResourceVersion()
			if ev.Type == kwatch.Bookmark || !keep(o) {
				return send(update{group: k, rv: rv})
			}
			return send(update{group: k, obj: o, deleted: ev.Type == kwatch.Deleted, rv: rv})
		})
		wi.Stop()
		if done {
			return
		}
		if gone {
			rv = ""
		}
	}
}

// watchEvents hands each event of wi to handle until the watch ends (an
// Error event: gone), handle returns false or ctx is done (done). A
// watch is not bound to ctx by every client: ctx is selected on here.
func watchEvents(ctx context.Context, wi kwatch.Interface, handle func(kwatch.Event) bool) (gone, done bool) {
	for {
		select {
		case <-ctx.Done():
			return false, true
		case ev, ok := <-wi.ResultChan():
			switch {
			case !ok:
				return false, false
			case ev.Type == kwatch.Error:
				return true, false
			case !handle(ev):
				return false, true
			}
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func toPod(o *unstructured.Unstructured) (*corev1.Pod, error) {
	p := &corev1.Pod{}
	return p, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, p)
}

// toPods are the pods of objs that can be read as pods, by name.
func toPods(objs map[string]*unstructured.Unstructured) map[string]*corev1.Pod {
	out := make(map[string]*corev1.Pod, len(objs))
	for name, o := range objs {
		if p, err := toPod(o); err == nil {
			out[name] = p
		}
	}
	return out
}

// uids are the UIDs of objs by name, those being deleted left out.
func uids(objs map[string]*unstructured.Unstructured) map[string]types.UID {
	out := make(map[string]types.UID, len(objs))
	for name, o := range objs {
		if o.GetDeletionTimestamp() == nil {
			out[name] = o.GetUID()
		}
	}
	return out
}

// specChanged reports whether a change's predicted spec differs from the
// live one (a change of metadata alone moves no generation).
func specChanged(ch *plan.Change) bool {
	return fieldChanged(ch, "spec")
}

// templateChanged reports whether a change's predicted pod template differs
// from the live one.
func templateChanged(ch *plan.Change) bool {
	return fieldChanged(ch, "spec", "template")
}

// fieldChanged reports whether the field at path differs between a
// change's live and predicted object (true when either is missing).
func fieldChanged(ch *plan.Change, path ...string) bool {
	if ch.Before == nil || ch.After == nil {
		return true
	}
	before, _, _ := unstructured.NestedFieldNoCopy(ch.Before.Object, path...)
	after, _, _ := unstructured.NestedFieldNoCopy(ch.After.Object, path...)
	return !reflect.DeepEqual(before, after)
}
