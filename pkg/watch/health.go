package watch

import (
	"fmt"
	"regexp"
	"strings"

	kstatus "github.com/fluxcd/cli-utils/pkg/kstatus/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// Health is an object's health at one moment, as the rollout watch judges
// it (see Check).
type Health struct {
	// State is plan.StateCurrent, plan.StateInProgress or
	// plan.StateFailed.
	State string
	// Detail is a workload's progress in its own terms ("1/3 updated, 3/3
	// ready, 2 old pending termination", "1 active, 0 succeeded, 0
	// failed"), "not found", or "not bound" (a claim); "" otherwise.
	Detail string
	// Reason is one line saying why the object is not current: the worst
	// problem of its pods (an image that cannot be pulled, a crash loop, a
	// pod that cannot be scheduled or is not ready), a Failed condition
	// with its reason (ProgressDeadlineExceeded, BackoffLimitExceeded), or
	// what kstatus says is still to come. It quotes the cluster: the
	// caller sanitises it like any other text from the cluster.
	Reason string
	// Trouble: Reason says something is wrong (a pod's problem, a Failed
	// condition), not only that the object is not done yet.
	Trouble bool
}

// String is h as the watch shows it: "in-progress: 1/3 updated, 3/3
// ready — pod web-1: …"; the reason only when not current.
func (h Health) String() string {
	return status{state: h.State, detail: h.Detail, reason: h.Reason}.line()
}

// Check judges obj, a live object of any kind, as the rollout watch does:
// current, in progress or failed, with why in one line. kstatus (the
// status rules of Flux and Helm 4's --wait) decides for every kind
// (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, PersistentVolume
// Claim, Service, CustomResourceDefinition, a custom resource with
// conditions, …); a workload's pods (those of pods its selector matches,
// pods being deleted left out) say why it is not ready, and a pod that
// cannot recover without a change (an image that cannot be pulled, a crash
// loop, a container that cannot be created) fails a workload that is not
// current yet, except a Job, which its own backoff limit fails. Only the
// pods of the revision being rolled out count against it: a StatefulSet's
// and a DaemonSet's are told by their status; every pod of a Deployment
// counts (which of its ReplicaSets is the new one takes a LIST). obj nil
// is an object not found: in progress. A PersistentVolumeClaim not bound
// yet is in progress (see CheckClaim). Check reads nothing from the
// cluster; pods may hold the pods of other workloads too.
func Check(obj *unstructured.Unstructured, pods []*corev1.Pod) Health {
	if obj != nil && obj.GroupVersionKind().GroupKind() == claimKind && unbound(obj) {
		return CheckClaim(obj, nil)
	}
	var kind schema.GroupKind
	if obj != nil {
		kind = obj.GroupVersionKind().GroupKind()
	}
	// With no plan to say whether pods are replaced, the detail counts
	// those of the newest revision, as kubectl rollout status does.
	return judgement{kind: kind, expect: expectReplaced, ofRevision: revisionLabel(kind.Kind, obj)}.of(obj, pods).health()
}

// CheckClaim judges a PersistentVolumeClaim given bindingMode, which
// says the volumeBindingMode of a StorageClass by name ("" when there is
// no such class; nil: not known). An unbound claim whose class binds on
// first use (WaitForFirstConsumer) is current, saying so: it is bound only
// when a pod using it is scheduled, which may be never. Any other unbound
// claim is in progress until it is bound. A bound claim is Check's.
func CheckClaim(claim *unstructured.Unstructured, bindingMode func(class string) (string, error)) Health {
	if !unbound(claim) {
		return Check(claim, nil)
	}
	return unboundClaim(claim, bindingMode).health()
}

var claimKind = schema.GroupKind{Kind: "PersistentVolumeClaim"}

func (s status) health() Health {
	return Health{State: s.state, Detail: s.detail, Reason: s.reason, Trouble: s.trouble}
}

// status is a target's state at one moment: its Health, and the
// crash-looping container the reason names, if any (the watch reads its
// log).
type status struct {
	state  string
	detail string
	reason string
	// trouble: the reason says something is wrong (a pod's problem, a
	// Failed condition), not only that it is not done yet.
	trouble bool
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

// judgement is what the health of an object is judged with beyond the
// object and pods: what the watch knows of it, nothing for Check.
type judgement struct {
	kind schema.GroupKind
	// podsBefore are the pods the workload had before the apply, by name:
	// listed after the new ones (the first problem found is a new pod's).
	podsBefore map[string]types.UID
	// expect is what the plan predicts of its pods: whether the detail
	// counts the pods updated.
	expect expectKind
	// ofRevision tells the pods of the revision being rolled out: the
	// problems of the others only say why it is not ready yet. Nil: all.
	ofRevision func(*corev1.Pod) bool
}

// evaluate is t's status given its live object (nil: not found) and the
// pods of its namespace; the problems of a workload's pods fail it only
// for the pods of the revision the upgrade produced (ofRevision; nil: all
// of them): those of the revision it replaces (a crash loop the upgrade
// repairs) only say why it is not ready yet.
func evaluate(t *target, obj *unstructured.Unstructured, pods []*corev1.Pod, ofRevision func(*corev1.Pod) bool) status {
	return judgement{kind: t.gvk.GroupKind(), podsBefore: t.podsBefore, expect: t.expect.kind, ofRevision: ofRevision}.of(obj, pods)
}

// of is the status of obj (nil: not found) given pods.
func (j judgement) of(obj *unstructured.Unstructured, pods []*corev1.Pod) status {
	if obj == nil {
		return status{state: plan.StateInProgress, detail: "not found"}
	}
	res, err := kstatus.Compute(obj)
	if err != nil {
		return status{state: plan.StateInProgress, reason: err.Error()}
	}
	if !Workload(j.kind) {
		switch res.Status {
		case kstatus.CurrentStatus:
			return status{state: plan.StateCurrent}
		case kstatus.FailedStatus:
			return status{state: plan.StateFailed, reason: res.Message, trouble: true}
		}
		return status{state: plan.StateInProgress, reason: res.Message}
	}
	mine := j.podsOf(obj, pods)
	s := status{state: plan.StateInProgress, detail: j.detail(obj)}
	var worst *problem
	for _, p := range mine {
		pr := podProblem(p)
		if pr != nil && j.ofRevision != nil && !j.ofRevision(p) {
			// Said of the pod, not after the message it quotes.
			pr.text = "pod " + p.Name + replacedMark + strings.TrimPrefix(pr.text, "pod "+p.Name)
			pr.fatal, pr.rank, pr.crashed, pr.replaced = false, 0, nil, true
		}
		if pr != nil && (worst == nil || pr.rank > worst.rank) {
			worst = pr
		}
	}
	s.trouble = worst != nil && !worst.replaced || res.Status == kstatus.FailedStatus
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
	case worst != nil && worst.fatal && j.kind.Kind != "Job":
		// A Job retries failed pods up to its backoff limit: its own
		// Failed condition decides.
		s.state, s.reason = plan.StateFailed, worst.text
	case worst != nil:
		s.reason = worst.text
	case !countsOnly.MatchString(res.Message):
		s.reason = res.Message
	}
	return s
}

// countsOnly matches kstatus's messages that only count pods ("Updated:
// 1/3", "Replicas: 4/3", "Pending termination: 1"), which the detail
// says in the workload's terms.
var countsOnly = regexp.MustCompile(`^[A-Za-z ]+: \d+(/\d+)?$`)

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
// not being deleted, the new ones (not there before the apply) first.
func (j judgement) podsOf(obj *unstructured.Unstructured, pods []*corev1.Pod) []*corev1.Pod {
	sel := selectorOf(obj)
	if sel == nil {
		return nil
	}
	var fresh, old []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp != nil || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if _, ok := j.podsBefore[p.Name]; ok && j.podsBefore[p.Name] == p.UID {
			old = append(old, p)
		} else {
			fresh = append(fresh, p)
		}
	}
	return append(fresh, old...)
}

// detail is a workload's progress in its own terms: pods updated (of the
// new revision), ready, and those beyond the desired count.
func (j judgement) detail(obj *unstructured.Unstructured) string {
	kind := j.kind.Kind
	if kind == "Job" {
		active, _, _ := unstructured.NestedInt64(obj.Object, "status", "active")
		succeeded, _, _ := unstructured.NestedInt64(obj.Object, "status", "succeeded")
		failed, _, _ := unstructured.NestedInt64(obj.Object, "status", "failed")
		return fmt.Sprintf("%d active, %d succeeded, %d failed", active, succeeded, failed)
	}
	r := counts(kind, obj)
	switch j.expect {
	case expectReplaced, expectPartition, expectReused:
		return r.words(kind, true)
	case expectKeptUntilDeleted:
		return "0 replaced; pods keep the old template until deleted, " + r.words(kind, false)
	case expectKept:
		return "no pod replaced, " + r.words(kind, false)
	}
	return r.words(kind, false)
}

// replicas are a workload's pod counts from its status: desired, all not
// terminating (total), of the newest revision (updated), ready.
type replicas struct {
	desired, total, updated, ready int64
}

// words say r as kubectl rollout status does, in short: "1/3 updated, 3
// ready, 2 old pending termination"; updated: say how many are of the new
// revision. A ready count above the desired one always comes with why: old
// pods still there (a surge), or more pods than desired (a scale-down).
func (r replicas) words(kind string, updated bool) string {
	var parts []string
	// "N/M" only with N ≤ M: more comes with the count of the surplus.
	of := func(n int64, what string) string {
		if n <= r.desired {
			return fmt.Sprintf("%d/%d %s", n, r.desired, what)
		}
		return fmt.Sprintf("%d %s", n, what)
	}
	if updated {
		parts = append(parts, of(r.updated, "updated"))
	}
	parts = append(parts, of(r.ready, "ready"))
	var old int64
	if updated && r.total > r.updated {
		old = r.total - r.updated
		// A Deployment's controller scales the old ReplicaSets down; a
		// StatefulSet's or DaemonSet's replaces each old pod in turn.
		switch kind {
		case "Deployment", "ReplicaSet":
			parts = append(parts, fmt.Sprintf("%d old pending termination", old))
		default:
			parts = append(parts, fmt.Sprintf("%d old to replace", old))
		}
	}
	if surplus := max(r.total, r.ready, r.updated) - r.desired; surplus > old {
		parts = append(parts, fmt.Sprintf("%d above the %d desired, being removed", surplus-old, r.desired))
	}
	return strings.Join(parts, ", ")
}

// counts are a workload's pod counts from its status; a spec without
// replicas wants one.
func counts(kind string, obj *unstructured.Unstructured) replicas {
	get := func(path ...string) int64 {
		v, _, _ := unstructured.NestedInt64(obj.Object, path...)
		return v
	}
	if kind == "DaemonSet" {
		return replicas{desired: get("status", "desiredNumberScheduled"), total: get("status", "currentNumberScheduled"),
			updated: get("status", "updatedNumberScheduled"), ready: get("status", "numberReady")}
	}
	want, ok, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if !ok {
		want = 1
	}
	return replicas{desired: want, total: get("status", "replicas"), updated: get("status", "updatedReplicas"), ready: get("status", "readyReplicas")}
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
