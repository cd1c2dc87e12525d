// Package watch is the stage after apply: it follows every object the plan
// created or changed until it is current (kstatus, the status rules Flux and
// Helm 4's --wait use) or has failed, says why a workload fails in words
// (from its pods' status and events), and checks what the plan predicted of
// its pods and claims against what happened (their UIDs before the apply and
// after the watch).
//
// Cost: one LIST of pods (and of claims, with StatefulSets) per namespace
// before the apply; then one LIST+WATCH per kind and namespace of the
// objects followed, one of pods per namespace holding workloads, one LIST
// of events per namespace where something failed, and one GET of a log per
// workload whose container crashed.
package watch

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

var (
	podsGVR   = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	claimsGVR = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	eventsGVR = schema.GroupVersionResource{Version: "v1", Resource: "events"}
)

// Watcher follows the objects of one applied plan.
type Watcher struct {
	cluster *live.Cluster
	targets []*target
	// claimsBefore are the claims of each namespace with a StatefulSet
	// followed, by name, read by Snapshot.
	claimsBefore map[string]map[string]types.UID
	// Refresh is how often progress is shown again with no change (the
	// elapsed time of each line); 0: one second.
	Refresh time.Duration
	// requests counts the LISTs and WATCHes sent, per resource (Requests).
	requests requestCount
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

// Requests says how many LISTs and WATCHes the watch sent so far, per
// resource: "configmaps 1 LIST + 1 WATCH, pods 2 LIST + 1 WATCH" (the
// snapshot's LIST of pods included). What its cost is measured by.
func (w *Watcher) Requests() string {
	w.requests.mu.Lock()
	defer w.requests.mu.Unlock()
	names := make([]string, 0, len(w.requests.count))
	for n := range w.requests.count {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		c := w.requests.count[n]
		parts[i] = fmt.Sprintf("%s %d LIST + %d WATCH", n, c[0], c[1])
	}
	return strings.Join(parts, ", ")
}

// target is one object followed.
type target struct {
	change *plan.Change
	gvk    schema.GroupVersionKind
	gvr    schema.GroupVersionResource
	expect expectation
	// podsBefore are the pods its selector (as it was live) matched before
	// the apply, by name.
	podsBefore map[string]types.UID
	// last is its status at the last evaluation; shown is true once it
	// has a progress line; trouble is the last status that said something
	// was wrong (see Alongside).
	last    status
	shown   bool
	trouble *status
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
// deletions, and CRDs the user applies by hand are not followed).
func New(cluster *live.Cluster, p *plan.Plan) *Watcher {
	w := &Watcher{cluster: cluster, claimsBefore: map[string]map[string]types.UID{}}
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
		w.targets = append(w.targets, t)
	}
	return w
}

// Empty reports whether there is nothing to follow.
func (w *Watcher) Empty() bool { return len(w.targets) == 0 }

// Snapshot reads, before the apply, the pods of the workloads followed and
// the claims of the StatefulSets: what the outcome compares with.
func (w *Watcher) Snapshot(ctx context.Context) error {
	pods := map[string][]corev1.Pod{}
	for _, t := range w.targets {
		if !t.workload() || t.change.Before == nil {
			continue
		}
		ns := t.change.ID.Namespace
		if _, ok := pods[ns]; !ok {
			w.requests.add(podsGVR, false)
			list, err := listPods(ctx, w.cluster.Dynamic, ns)
			if err != nil {
				return fmt.Errorf("reading the pods of namespace %s before the apply: %w", ns, err)
			}
			pods[ns] = list
		}
		sel := selectorOf(t.change.Before)
		t.podsBefore = map[string]types.UID{}
		for _, p := range pods[ns] {
			if p.DeletionTimestamp == nil && sel != nil && sel.Matches(labels.Set(p.Labels)) {
				t.podsBefore[p.Name] = p.UID
			}
		}
		if t.gvk.Kind == "StatefulSet" && w.claimsBefore[ns] == nil {
			claims, err := listUIDs(ctx, w.cluster.Dynamic.Resource(claimsGVR).Namespace(ns))
			if err != nil {
				return fmt.Errorf("reading the claims of namespace %s before the apply: %w", ns, err)
			}
			w.claimsBefore[ns] = claims
		}
	}
	return nil
}

// groupKey is one LIST+WATCH of followed objects.
type groupKey struct {
	gvr schema.GroupVersionResource
	ns  string
}

// update is one object seen by a LIST or a WATCH.
type update struct {
	group   groupKey
	deleted bool
	obj     *unstructured.Unstructured
	// listed marks the end of a group's first LIST; err a group that cannot
	// be followed.
	listed bool
	err    error
}

// Run follows the objects until each is current or failed, or timeout
// passes, showing progress on show, and returns the outcome. The error is
// for the watch itself (not for a failed rollout, which the outcome says).
func (w *Watcher) Run(ctx context.Context, timeout time.Duration, show Progress) (*plan.Outcome, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pods, timedOut := w.follow(ctx, start, show, true)
	out := w.outcome(context.WithoutCancel(ctx), pods, time.Since(start), timedOut)
	return out, nil
}

// Alongside follows the objects while Helm still applies and waits (--wait,
// --atomic), until ctx is done, showing progress on show; it does not end
// when they settle, since Helm may not have changed them yet. It returns
// what it last saw wrong with each object it saw failing or stuck (a pod's
// problem, a Failed condition), as `ID state: detail — reason` lines, even
// when the object was fine again later (Helm's --atomic rolled it back):
// what Helm's own wait error does not say. Nil when it saw nothing wrong.
func (w *Watcher) Alongside(ctx context.Context, show Progress) []string {
	w.follow(ctx, time.Now(), show, false)
	var out []string
	for _, t := range w.targets {
		if t.trouble != nil {
			out = append(out, t.change.ID.String()+" "+t.trouble.line())
		}
		t.trouble, t.last, t.shown = nil, status{}, false // Run starts afresh
	}
	return out
}

// follow LISTs and WATCHes the objects and their pods, evaluating each
// target on every change and every Refresh, until ctx is done (timedOut)
// or, with untilSettled, every target is settled; it returns the last view
// of the pods, by namespace and name.
func (w *Watcher) follow(ctx context.Context, start time.Time, show Progress, untilSettled bool) (pods map[string]map[string]*corev1.Pod, timedOut bool) {
	ctx, cancel := context.WithCancel(ctx)
	groups := map[groupKey]map[string]bool{} // names followed per group
	podNamespaces := map[string]bool{}
	for _, t := range w.targets {
		_, mapping, err := w.cluster.Resource(t.gvk, t.change.ID.Namespace)
		if err != nil {
			t.last = status{state: plan.StateUnknown, reason: err.Error()}
			continue
		}
		t.gvr = mapping.Resource
		k := groupKey{t.gvr, t.change.ID.Namespace}
		if groups[k] == nil {
			groups[k] = map[string]bool{}
		}
		groups[k][t.change.ID.Name] = true
		if t.workload() {
			podNamespaces[t.change.ID.Namespace] = true
		}
	}
	updates := make(chan update, 64)
	var wg sync.WaitGroup
	follow := func(k groupKey, names map[string]bool) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			followGroup(ctx, w.cluster.Dynamic, k, names, updates, &w.requests)
		}()
	}
	for k, names := range groups {
		follow(k, names)
	}
	for ns := range podNamespaces {
		follow(groupKey{podsGVR, ns}, nil)
	}
	defer func() { cancel(); go func() { wg.Wait(); close(updates) }(); drain(updates) }()

	objs := map[groupKey]map[string]*unstructured.Unstructured{}
	pods = map[string]map[string]*corev1.Pod{}
	pending := len(groups) + len(podNamespaces)
	failedGroups := map[groupKey]error{}
	refresh := w.Refresh
	if refresh <= 0 {
		refresh = time.Second
	}
	tick := time.NewTicker(refresh)
	defer tick.Stop()
loop:
	for {
		select {
		case u := <-updates:
			switch {
			case u.err != nil:
				failedGroups[u.group] = u.err
				pending--
			case u.listed:
				pending--
			case u.group.gvr == podsGVR:
				if pods[u.group.ns] == nil {
					pods[u.group.ns] = map[string]*corev1.Pod{}
				}
				if u.deleted {
					delete(pods[u.group.ns], u.obj.GetName())
				} else if p, err := toPod(u.obj); err == nil {
					pods[u.group.ns][p.Name] = p
				}
			default:
				if objs[u.group] == nil {
					objs[u.group] = map[string]*unstructured.Unstructured{}
				}
				if u.deleted {
					delete(objs[u.group], u.obj.GetName())
				} else {
					objs[u.group][u.obj.GetName()] = u.obj
				}
			}
			if pending > 0 || len(updates) > 0 {
				continue // evaluate once the first LISTs are in and the queue is empty
			}
		case <-tick.C:
			if pending > 0 {
				continue
			}
		case <-ctx.Done():
			timedOut = true
			break loop
		}
		if w.evaluate(objs, pods, failedGroups, show, time.Since(start)) && untilSettled {
			break
		}
	}
	if timedOut && pending > 0 {
		// Never listed: say so rather than leave them "in progress".
		for _, t := range w.targets {
			if t.last.state == "" {
				t.last = status{state: plan.StateInProgress, reason: "not observed before the watch timed out"}
			}
		}
	}
	show.Done()
	return pods, timedOut
}

// evaluate computes every target's status, shows them, and reports
// whether all are settled (current, failed or unknown).
func (w *Watcher) evaluate(objs map[groupKey]map[string]*unstructured.Unstructured, pods map[string]map[string]*corev1.Pod,
	failedGroups map[groupKey]error, show Progress, elapsed time.Duration) bool {
	settled := true
	lines := make([]Line, 0, len(w.targets))
	for _, t := range w.targets {
		k := groupKey{t.gvr, t.change.ID.Namespace}
		switch {
		case t.gvr.Resource == "":
			// Not mapped: t.last says why.
		case failedGroups[k] != nil:
			t.last = status{state: plan.StateUnknown, reason: "cannot watch: " + failedGroups[k].Error()}
		default:
			t.last = evaluate(t, objs[k][t.change.ID.Name], podList(pods[t.change.ID.Namespace]))
		}
		if t.last.trouble {
			last := t.last
			t.trouble = &last
		}
		if t.last.state == plan.StateInProgress {
			settled = false
		}
		// One line per workload, and per other object while it is not
		// current: a ConfigMap that was current at once needs none. Once
		// shown, a line stays (a terminal's lines are redrawn in place).
		if t.shown = t.shown || t.workload() || t.last.state != plan.StateCurrent; t.shown {
			lines = append(lines, Line{ID: t.change.ID.String(), Text: t.last.line()})
		}
	}
	show.Update(lines, elapsed)
	return settled
}

func podList(m map[string]*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(m))
	for _, p := range m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func drain(ch <-chan update) {
	for range ch {
	}
}

// followGroup LISTs the objects of k (only names, when given) and WATCHes
// them from the LIST's resource version, sending each to updates, until
// ctx is done; a WATCH that ends is started again from the last version
// seen, a LIST again when that version is gone.
func followGroup(ctx context.Context, dyn dynamic.Interface, k groupKey, names map[string]bool, updates chan<- update, count *requestCount) {
	ri := dyn.Resource(k.gvr).Namespace(k.ns)
	opts := metav1.ListOptions{}
	if len(names) == 1 {
		for n := range names {
			opts.FieldSelector = "metadata.name=" + n
		}
	}
	send := func(u update) bool {
		select {
		case updates <- u:
			return true
		case <-ctx.Done():
			return false
		}
	}
	keep := func(o *unstructured.Unstructured) bool { return names == nil || names[o.GetName()] }
	first := true
	for ctx.Err() == nil {
		count.add(k.gvr, false)
		list, err := ri.List(ctx, opts)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if first && (apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err)) {
				send(update{group: k, err: err})
				return
			}
			if !sleep(ctx, time.Second) {
				return
			}
			continue
		}
		for i := range list.Items {
			if o := &list.Items[i]; keep(o) && !send(update{group: k, obj: o}) {
				return
			}
		}
		if first {
			first = false
			if !send(update{group: k, listed: true}) {
				return
			}
		}
		rv := list.GetResourceVersion()
		for ctx.Err() == nil {
			wopts := opts
			wopts.ResourceVersion, wopts.AllowWatchBookmarks = rv, true
			count.add(k.gvr, true)
			wi, err := ri.Watch(ctx, wopts)
			if err != nil {
				break // LIST again
			}
			gone, done := watchEvents(ctx, wi, func(ev kwatch.Event) bool {
				o, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					return true
				}
				rv = o.GetResourceVersion()
				if ev.Type == kwatch.Bookmark || !keep(o) {
					return true
				}
				return send(update{group: k, obj: o, deleted: ev.Type == kwatch.Deleted})
			})
			wi.Stop()
			if done {
				return
			}
			if gone {
				break
			}
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

func listPods(ctx context.Context, dyn dynamic.Interface, ns string) ([]corev1.Pod, error) {
	list, err := dyn.Resource(podsGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		p, err := toPod(&list.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *p)
	}
	return out, nil
}

// listUIDs returns the UIDs of the objects ri lists, by name (those being
// deleted left out).
func listUIDs(ctx context.Context, ri dynamic.ResourceInterface) (map[string]types.UID, error) {
	list, err := ri.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]types.UID, len(list.Items))
	for _, o := range list.Items {
		if o.GetDeletionTimestamp() == nil {
			out[o.GetName()] = o.GetUID()
		}
	}
	return out, nil
}

// selectorOf is a workload's pod selector (spec.selector); nil when it has
// none or it cannot be read.
func selectorOf(o *unstructured.Unstructured) labels.Selector {
	if o == nil {
		return nil
	}
	m, ok, _ := unstructured.NestedMap(o.Object, "spec", "selector")
	if !ok {
		return nil
	}
	ls := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, ls); err != nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil || sel.Empty() {
		return nil
	}
	return sel
}

// status is a target's state at one moment.
type status struct {
	state  string
	detail string
	reason string
	// trouble: the reason says something is wrong (a pod's problem, a
	// Failed condition), not only that it is not done yet.
	trouble bool
	// crashed is the crash-looping container the reason names, if any.
	crashed *container
}

func (s status) line() string {
	text := s.state
	if s.detail != "" {
		text += ": " + s.detail
	}
	if s.reason != "" && s.state != plan.StateCurrent {
		text += " — " + s.reason
	}
	return text
}

// evaluate is t's status given its live object (nil: not found) and the
// pods of its namespace.
func evaluate(t *target, obj *unstructured.Unstructured, pods []*corev1.Pod) status {
	if obj == nil {
		return status{state: plan.StateInProgress, detail: "not found"}
	}
	res, err := kstatus.Compute(obj)
	if err != nil {
		return status{state: plan.StateInProgress, reason: err.Error()}
	}
	if !t.workload() {
		switch res.Status {
		case kstatus.CurrentStatus:
			return status{state: plan.StateCurrent}
		case kstatus.FailedStatus:
			return status{state: plan.StateFailed, reason: res.Message, trouble: true}
		}
		return status{state: plan.StateInProgress, reason: res.Message}
	}
	mine := t.podsOf(obj, pods)
	s := status{state: plan.StateInProgress, detail: t.detail(obj, res.Status == kstatus.CurrentStatus)}
	var worst *problem
	for _, p := range mine {
		if pr := podProblem(p); pr != nil && (worst == nil || pr.rank > worst.rank) {
			worst = pr
		}
	}
	s.trouble = worst != nil || res.Status == kstatus.FailedStatus
	if worst != nil {
		s.crashed = worst.crashed
	}
	switch {
	case res.Status == kstatus.FailedStatus:
		s.state, s.reason = plan.StateFailed, failedMessage(res)
		if worst != nil {
			s.reason += "; " + worst.text
		}
	case res.Status == kstatus.CurrentStatus:
		s.state = plan.StateCurrent
	case worst != nil && worst.fatal && t.gvk.Kind != "Job":
		// A Job retries failed pods up to its backoff limit: its own
		// Failed condition decides.
		s.state, s.reason = plan.StateFailed, worst.text
	case worst != nil:
		s.reason = worst.text
	default:
		s.reason = res.Message
	}
	return s
}

// failedMessage is kstatus's message with the reason of the condition
// behind it (ProgressDeadlineExceeded, BackoffLimitExceeded, ...).
func failedMessage(res *kstatus.Result) string {
	for _, c := range res.Conditions {
		if c.Reason != "" && c.Message != "" {
			return fmt.Sprintf("%s (%s)", c.Message, c.Reason)
		}
		if c.Reason != "" {
			return fmt.Sprintf("%s (%s)", res.Message, c.Reason)
		}
	}
	return res.Message
}

// podsOf are the pods of pods that obj's selector matches and that are
// not being deleted, the new ones (created since the snapshot) first.
func (t *target) podsOf(obj *unstructured.Unstructured, pods []*corev1.Pod) []*corev1.Pod {
	sel := selectorOf(obj)
	if sel == nil {
		return nil
	}
	var fresh, old []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp != nil || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if _, ok := t.podsBefore[p.Name]; ok && t.podsBefore[p.Name] == p.UID {
			old = append(old, p)
		} else {
			fresh = append(fresh, p)
		}
	}
	return append(fresh, old...)
}

// detail is a workload's progress: pods replaced and ready.
func (t *target) detail(obj *unstructured.Unstructured, current bool) string {
	if t.gvk.Kind == "Job" {
		active, _, _ := unstructured.NestedInt64(obj.Object, "status", "active")
		succeeded, _, _ := unstructured.NestedInt64(obj.Object, "status", "succeeded")
		failed, _, _ := unstructured.NestedInt64(obj.Object, "status", "failed")
		return fmt.Sprintf("%d active, %d succeeded, %d failed", active, succeeded, failed)
	}
	want, updated, ready := counts(t.gvk.Kind, obj)
	readyText := fmt.Sprintf("%d/%d ready", ready, want)
	if current {
		readyText = "ready"
	}
	switch t.expect.kind {
	case expectReplaced, expectPartition:
		return fmt.Sprintf("%d/%d replaced, %s", updated, want, readyText)
	case expectKeptUntilDeleted:
		return "0 replaced; pods keep the old template until deleted, " + readyText
	case expectKept:
		return "no pod replaced, " + readyText
	}
	return readyText
}

// counts are a workload's desired, updated and ready pods from its status.
func counts(kind string, obj *unstructured.Unstructured) (want, updated, ready int64) {
	get := func(path ...string) int64 {
		v, _, _ := unstructured.NestedInt64(obj.Object, path...)
		return v
	}
	if kind == "DaemonSet" {
		return get("status", "desiredNumberScheduled"), get("status", "updatedNumberScheduled"), get("status", "numberReady")
	}
	want, ok, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if !ok {
		want = 1
	}
	return want, get("status", "updatedReplicas"), get("status", "readyReplicas")
}

// templateChanged reports whether a change's predicted pod template differs
// from the live one.
func templateChanged(ch *plan.Change) bool {
	if ch.Before == nil || ch.After == nil {
		return true
	}
	before, _, _ := unstructured.NestedFieldNoCopy(ch.Before.Object, "spec", "template")
	after, _, _ := unstructured.NestedFieldNoCopy(ch.After.Object, "spec", "template")
	return !reflect.DeepEqual(before, after)
}
