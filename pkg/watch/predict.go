package watch

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// expectKind is what the plan predicts of a workload's pods.
type expectKind int

const (
	// expectNone: nothing predicted of pods (a create, not a workload).
	expectNone expectKind = iota
	// expectKept: no pod replaced (an in-place update, or a StatefulSet
	// recreated with its pods orphaned and its template unchanged).
	expectKept
	// expectKeptUntilDeleted: updateStrategy OnDelete; pods keep the old
	// template until each is deleted.
	expectKeptUntilDeleted
	// expectReplaced: every pod replaced (a rolling update, a recreate).
	expectReplaced
	// expectPartition: a StatefulSet's pods with an ordinal at or above
	// partition replaced, the others kept.
	expectPartition
	// expectReused: a Deployment's template is that of an earlier
	// ReplicaSet (reused), which the controller scales back up: its
	// pods (reusedPods) kept, the others replaced.
	expectReused
)

type expectation struct {
	kind      expectKind
	partition int64
	// reused is the earlier ReplicaSet scaled back up, reusedPods its
	// pods before the apply.
	reused     string
	reusedPods map[string]bool
	// claimsKept: a StatefulSet's claims must all be kept.
	claimsKept bool
}

// expect is what the plan predicts of t's pods and claims.
func expect(t *target) expectation {
	ch := t.change
	if !t.workload() || t.gvk.Kind == "Job" || ch.Action != plan.ActionUpdate || ch.After == nil {
		return expectation{}
	}
	sts := t.gvk.Kind == "StatefulSet"
	templates, _, _ := unstructured.NestedSlice(ch.After.Object, "spec", "volumeClaimTemplates")
	e := expectation{claimsKept: sts && len(templates) > 0}
	strategy, partition := updateStrategy(ch.After)
	rolls := func() expectation {
		switch {
		case strategy == "OnDelete":
			e.kind = expectKeptUntilDeleted
		case sts && partition > 0:
			e.kind, e.partition = expectPartition, partition
		default:
			e.kind = expectReplaced
		}
		return e
	}
	switch ch.Class {
	case plan.ClassRolling:
		return rolls()
	case plan.ClassRecreateRequired:
		// A StatefulSet is deleted with its pods orphaned: the new one
		// adopts them, and replaces them only if its template changed, as
		// its update strategy says. Other workloads go with their pods.
		if sts {
			if templateChanged(ch) {
				return rolls()
			}
			e.kind = expectKept
			return e
		}
		e.kind = expectReplaced
		return e
	case plan.ClassInPlace:
		e.kind = expectKept
	}
	return e
}

// updateStrategy is a workload's update strategy type and StatefulSet
// partition.
func updateStrategy(o *unstructured.Unstructured) (string, int64) {
	if o == nil {
		return "", 0
	}
	typ, _, _ := unstructured.NestedString(o.Object, "spec", "updateStrategy", "type")
	if typ == "" {
		typ, _, _ = unstructured.NestedString(o.Object, "spec", "strategy", "type")
	}
	partition, _, _ := unstructured.NestedInt64(o.Object, "spec", "updateStrategy", "rollingUpdate", "partition")
	return typ, partition
}

func (e expectation) String() string {
	s := ""
	switch e.kind {
	case expectKept:
		s = "no pod replaced"
	case expectKeptUntilDeleted:
		s = "0 replaced; pods keep the old template until deleted"
	case expectReplaced:
		s = "every pod replaced"
	case expectPartition:
		s = fmt.Sprintf("pods with ordinal %d and above replaced, the others kept", e.partition)
	case expectReused:
		s = fmt.Sprintf("pods of the earlier ReplicaSet %s kept and scaled back up, the others replaced", e.reused)
	}
	if e.claimsKept {
		s += ", every claim kept"
	}
	return s
}

// outcome checks each target against what was observed: pods is the
// watch's last view of the pods, the claims its last view of them.
func (w *Watcher) outcome(ctx context.Context, pods map[string]map[string]*corev1.Pod, elapsed time.Duration, end watchEnd) *plan.Outcome {
	out := &plan.Outcome{Elapsed: elapsed}
	claimsAfter := map[string]map[string]types.UID{}
	for ns := range w.claimsBefore {
		if v := w.views[groupKey{live.ClaimsGVR, ns}]; v != nil {
			claimsAfter[ns] = uids(v.objs)
		}
	}
	var events map[string][]corev1.Event
	for _, t := range w.targets {
		oo := plan.ObjectOutcome{ID: t.change.ID, State: t.last.state, Detail: t.last.detail, Reason: t.last.reason}
		if oo.State == "" {
			oo.State = plan.StateInProgress
		}
		ns := t.change.ID.Namespace
		if t.workload() && (oo.State == plan.StateFailed || oo.State == plan.StateInProgress) {
			if events == nil {
				events = map[string][]corev1.Event{}
			}
			if _, ok := events[ns]; !ok {
				events[ns] = listEvents(ctx, w, ns)
			}
			// An event of the workload's own pods (another workload's
			// is its reason, not this one's), and only when it adds to what
			// the pods' status said (a FailedScheduling event repeats the
			// pod's condition).
			var mine []*corev1.Pod
			if obj := w.objectsOf(t.group)[t.change.ID.Name]; obj != nil {
				mine = judgement{kind: t.gvk.GroupKind(), podsBefore: t.podsBefore}.podsOf(obj, podList(pods[ns]))
			}
			if note, msg := eventNote(events[ns], podNames(mine)); note != "" && !strings.Contains(oo.Reason, msg) {
				oo.Reason = joinReason(oo.Reason, note)
			}
		}
		if c := t.last.crashed; c != nil && (oo.State == plan.StateFailed || oo.State == plan.StateInProgress) {
			if lines := lastLogLines(ctx, w.reader, c); lines != "" {
				oo.Reason = joinReason(oo.Reason, fmt.Sprintf("last log lines of container %s: %s", c.name, lines))
			}
		}
		// How the watch ended is the outcome's to say, once (TimedOut,
		// Interrupted): every object's reason repeating it would say it
		// once per object in the lines that join them.
		if oo.State == plan.StateInProgress && oo.Reason == notObserved {
			oo.Reason = "not observed before the watch ended"
		}
		// Not current when the watch was interrupted: not seen to its end,
		// so neither failed nor checked against the prediction (the
		// outcome's Interrupted says why, once).
		unfinished := end == endInterrupted && oo.State == plan.StateInProgress
		if (oo.State == plan.StateFailed || oo.State == plan.StateInProgress) && t.unreadyBefore != "" {
			before := "it was not ready before the upgrade either: " + t.unreadyBefore
			if strings.Contains(strings.ReplaceAll(oo.Reason, replacedMark, ""), t.unreadyBefore) {
				before = "it was not ready before the upgrade either, for the same reason"
			}
			oo.Reason = joinReason(oo.Reason, before)
		}
		if (t.expect.kind != expectNone || t.expect.claimsKept) && !unfinished {
			t.check(&oo, pods[ns], w.claimsBefore[ns], claimsAfter[ns])
			if oo.AsPredicted {
				out.AsPredicted++
			} else {
				out.Differ++
			}
		}
		if oo.State == plan.StateFailed || oo.State == plan.StateInProgress {
			out.Failed++
		}
		out.Objects = append(out.Objects, oo)
	}
	out.TimedOut = end == endTimedOut && out.Failed > 0
	out.Interrupted = end == endInterrupted
	return out
}

// replacedMark follows the name of a pod of the revision the rollout
// replaces in its problem's text: the same problem as before the upgrade.
const replacedMark = " (of the revision being replaced)"

func joinReason(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

func podNames(pods []*corev1.Pod) map[string]bool {
	out := make(map[string]bool, len(pods))
	for _, p := range pods {
		out[p.Name] = true
	}
	return out
}

func listEvents(ctx context.Context, w *Watcher, ns string) []corev1.Event {
	w.requests.add(live.EventsGVR, false)
	list, err := w.reader.List(ctx, live.EventsGVR, ns, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	out := make([]corev1.Event, 0, len(list.Items))
	for i := range list.Items {
		var e corev1.Event
		if runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// check fills oo's prediction and observation: the pods t's selector
// matched before the apply that are still there (same UID), the new ones,
// and the claims.
func (t *target) check(oo *plan.ObjectOutcome, pods map[string]*corev1.Pod, claimsBefore, claimsAfter map[string]types.UID) {
	e := t.expect
	oo.Predicted = e.String()
	oo.PodsBefore = len(t.podsBefore)
	var keptLow, keptHigh, low, high int
	for name, uid := range t.podsBefore {
		p := pods[name]
		kept := p != nil && p.UID == uid && p.DeletionTimestamp == nil
		below := e.kind == expectPartition && ordinal(name) < e.partition || e.kind == expectReused && e.reusedPods[name]
		if below {
			low++
		} else {
			high++
		}
		if kept {
			oo.PodsKept++
			if below {
				keptLow++
			} else {
				keptHigh++
			}
		}
	}
	var obs []string
	switch e.kind {
	case expectKept, expectKeptUntilDeleted:
		oo.AsPredicted = oo.PodsKept == oo.PodsBefore
		obs = append(obs, fmt.Sprintf("%d of %d pod(s) kept", oo.PodsKept, oo.PodsBefore))
	case expectReplaced:
		oo.AsPredicted = oo.PodsKept == 0 && oo.State == plan.StateCurrent
		obs = append(obs, fmt.Sprintf("%d of %d pod(s) replaced", oo.PodsBefore-oo.PodsKept, oo.PodsBefore))
	case expectPartition:
		oo.AsPredicted = keptLow == low && keptHigh == 0 && oo.State == plan.StateCurrent
		obs = append(obs, fmt.Sprintf("%d of %d pod(s) at or above the partition replaced, %d of %d below kept", high-keptHigh, high, keptLow, low))
	case expectReused:
		oo.AsPredicted = keptLow == low && keptHigh == 0 && oo.State == plan.StateCurrent
		obs = append(obs, fmt.Sprintf("%d of %d pod(s) of ReplicaSet %s kept, %d of %d other(s) replaced", keptLow, low, e.reused, high-keptHigh, high))
	default:
		oo.AsPredicted = true
	}
	if e.claimsKept {
		for name, uid := range claimsBefore {
			if !strings.HasSuffix(name, "-"+t.change.ID.Name+"-"+strconv.FormatInt(ordinal(name), 10)) || ordinal(name) < 0 {
				continue // not a claim of this StatefulSet
			}
			oo.ClaimsBefore++
			if claimsAfter[name] == uid {
				oo.ClaimsKept++
			}
		}
		if oo.ClaimsKept != oo.ClaimsBefore {
			oo.AsPredicted = false
		}
		obs = append(obs, fmt.Sprintf("%d of %d claim(s) kept", oo.ClaimsKept, oo.ClaimsBefore))
	}
	oo.Observed = strings.Join(obs, ", ")
}

// ordinal is the ordinal a StatefulSet's pod or claim name ends with, -1
// when it ends with none.
func ordinal(name string) int64 {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return -1
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}
