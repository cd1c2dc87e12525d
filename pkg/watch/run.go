package watch

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// Run follows the objects until each is current or failed, or timeout
// passes, showing progress on show, and returns the outcome. The error is
// for the watch itself (not for a failed rollout, which the outcome says):
// an *UnansweredError when, at the timeout, the API server does not answer
// one request within RequestTimeout, since what the watch last saw then
// says nothing of the rollout. ctx ending before the timeout (Ctrl-C) is
// an interrupted watch, not a timed-out one: the outcome says so
// (Outcome.Interrupted), and what was not current then is only not seen
// to its end.
func (w *Watcher) Run(ctx context.Context, timeout time.Duration, show Progress) (*plan.Outcome, error) {
	start := time.Now()
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pods, ended := w.follow(ctx, start, show, false)
	w.Stop()
	interrupted := ended && parent.Err() != nil
	// What follows the watch's own deadline is bounded by one request's.
	after, cancelAfter := w.requestContext(ctx)
	defer cancelAfter()
	if ended && !interrupted {
		if err := w.answering(after); err != nil {
			return nil, &UnansweredError{Err: err, After: time.Since(start)}
		}
	}
	end := endTimedOut
	switch {
	case interrupted:
		end = endInterrupted
	case !ended:
		end = endSettled
	}
	out := w.outcome(after, pods, time.Since(start), end)
	return out, nil
}

// notObserved is the reason of an object never LISTed before the watch
// ended.
const notObserved = "not observed"

// watchEnd is how a watch ended: every object settled, at its timeout, or
// interrupted (its context cancelled: Ctrl-C).
type watchEnd int

const (
	endSettled watchEnd = iota
	endTimedOut
	endInterrupted
)

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
				t.last = status{state: plan.StateInProgress, reason: notObserved}
			}
		}
	}
	show.Done()
	return w.pods, timedOut
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

func podList(m map[string]*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(m))
	for _, p := range m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
