package watch

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

func pod(name string, mutate func(p *corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}}}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func waiting(reason, msg string) func(p *corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = nil
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", Image: "nginx:pull-error",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}
	}
}

func TestPodProblem(t *testing.T) {
	tests := []struct {
		name      string
		pod       *corev1.Pod
		want      []string // substrings; none: no problem
		wantFatal bool
	}{
		{name: "ready", pod: pod("a", nil)},
		{name: "starting", pod: pod("a", waiting("ContainerCreating", ""))},
		{name: "first pull error is not fatal yet", pod: pod("a", waiting("ErrImagePull", "not found")),
			want: []string{"image nginx:pull-error cannot be pulled (ErrImagePull): not found"}},
		{name: "pull back-off", pod: pod("a", waiting("ImagePullBackOff", `Back-off pulling image "nginx:pull-error"`)),
			want: []string{"pod a: image nginx:pull-error cannot be pulled (ImagePullBackOff): Back-off pulling image"}, wantFatal: true},
		{name: "crash loop names the exit code", pod: pod("a", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", RestartCount: 3,
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "boot\nno database\n"}}}}
		}), want: []string{"container web is crash-looping (CrashLoopBackOff, restarted 3 time(s)): last exited with code 1 (Error): no database"}, wantFatal: true},
		{name: "unschedulable waits for the timeout", pod: pod("a", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
				Message: "0/3 nodes are available: 3 Insufficient cpu."}}
		}), want: []string{"pod a cannot be scheduled (Unschedulable): 0/3 nodes are available: 3 Insufficient cpu."}},
		{name: "running, not ready", pod: pod("a", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady",
				Message: "containers with unready status: [web]"}}
		}), want: []string{"running but not ready (readiness failing): containers with unready status: [web]"}},
		{name: "failed job pod", pod: pod("a", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "migrate",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}
		}), want: []string{"container migrate last exited with code 1 (Error)"}, wantFatal: true},
		{name: "being deleted", pod: pod("a", func(p *corev1.Pod) {
			now := metav1.Now()
			p.DeletionTimestamp = &now
			waiting("ImagePullBackOff", "x")(p)
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := podProblem(tt.pod)
			if len(tt.want) == 0 {
				if got != nil {
					t.Fatalf("want no problem, got %+v", got)
				}
				return
			}
			if got == nil {
				t.Fatalf("want a problem with %q, got none", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(got.text, w) {
					t.Errorf("problem %q does not say %q", got.text, w)
				}
			}
			if got.fatal != tt.wantFatal {
				t.Errorf("fatal = %v, want %v", got.fatal, tt.wantFatal)
			}
		})
	}
}

// TestSchedulerReasons: the scheduler's reasons for a pod it cannot place
// are quoted without what its preemption appended after them.
func TestSchedulerReasons(t *testing.T) {
	tests := []struct{ name, msg, want string }{
		{"unbound claim, a PostFilter's error", "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found",
			"0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."},
		{"preemption's message", "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
			"0/3 nodes are available: 3 Insufficient cpu."},
		{"a taint's dotted key", "0/2 nodes are available: 2 node(s) had untolerated taint {node.kubernetes.io/not-ready: }. preemption: not eligible",
			"0/2 nodes are available: 2 node(s) had untolerated taint {node.kubernetes.io/not-ready: }."},
		{"nothing appended", "0/3 nodes are available: 3 Insufficient cpu.", "0/3 nodes are available: 3 Insufficient cpu."},
		{"another message, as it is", "binding rejected: running Bind plugin. not found", "binding rejected: running Bind plugin. not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := schedulerReasons(tt.msg); got != tt.want {
				t.Errorf("%q: %q, want %q", tt.msg, got, tt.want)
			}
			p := pod("a", func(p *corev1.Pod) {
				p.Status.Phase = corev1.PodPending
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: tt.msg}}
			})
			if got := podProblem(p).text; got != "pod a cannot be scheduled (Unschedulable): "+tt.want {
				t.Errorf("problem %q", got)
			}
			ev := corev1.Event{Type: corev1.EventTypeWarning, Reason: "FailedScheduling", Message: tt.msg,
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "a"}}
			if got, _ := eventNote([]corev1.Event{ev}, map[string]bool{"a": true}); got != "event FailedScheduling on pod a: "+tt.want {
				t.Errorf("event note %q", got)
			}
		})
	}
}

func workload(kind string, spec map[string]interface{}, st map[string]interface{}) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apps/v1", "kind": kind,
		"metadata": map[string]interface{}{"name": "web", "namespace": "ns", "generation": int64(2)},
		"spec":     spec,
	}}
	if st != nil {
		st["observedGeneration"] = int64(2)
		o.Object["status"] = st
	}
	return o
}

var (
	selector       = map[string]interface{}{"matchLabels": map[string]interface{}{"app": "web"}}
	claimTemplates = []interface{}{map[string]interface{}{"metadata": map[string]interface{}{"name": "data"}}}
)

func deploymentTarget(class plan.Class, before, after *unstructured.Unstructured) *target {
	ch := &plan.Change{ID: manifest.ObjectID{Group: "apps", Kind: after.GetKind(), Namespace: "ns", Name: "web"}, APIVersion: "apps/v1",
		Action: plan.ActionUpdate, Class: class, Before: before, After: after}
	t := &target{change: ch, gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: after.GetKind()}}
	t.expect = expect(t)
	return t
}

func TestExpect(t *testing.T) {
	tmpl := func(image string) map[string]interface{} {
		return map[string]interface{}{"spec": map[string]interface{}{"containers": []interface{}{map[string]interface{}{"name": "c", "image": image}}}}
	}
	sts := func(strategy map[string]interface{}, image string) *unstructured.Unstructured {
		return workload("StatefulSet", map[string]interface{}{"selector": selector, "updateStrategy": strategy, "template": tmpl(image),
			"volumeClaimTemplates": claimTemplates}, nil)
	}
	rolling := map[string]interface{}{"type": "RollingUpdate"}
	tests := []struct {
		name          string
		class         plan.Class
		before, after *unstructured.Unstructured
		want          string
	}{
		{"deployment rolls", plan.ClassRolling, nil, workload("Deployment", map[string]interface{}{"selector": selector}, nil), "every pod replaced"},
		{"in-place keeps pods", plan.ClassInPlace, nil, workload("Deployment", map[string]interface{}{"selector": selector}, nil), "no pod replaced"},
		{"OnDelete keeps pods until deleted", plan.ClassRolling, nil, sts(map[string]interface{}{"type": "OnDelete"}, "b"),
			"0 replaced; pods keep the old template until deleted, every claim kept"},
		{"partition", plan.ClassRolling, nil, sts(map[string]interface{}{"type": "RollingUpdate", "rollingUpdate": map[string]interface{}{"partition": int64(2)}}, "b"),
			"pods with ordinal 2 and above replaced, the others kept, every claim kept"},
		{"orphan recreate, same template", plan.ClassRecreateRequired, sts(rolling, "a"), sts(rolling, "a"), "no pod replaced, every claim kept"},
		{"orphan recreate, new template", plan.ClassRecreateRequired, sts(rolling, "a"), sts(rolling, "b"), "every pod replaced, every claim kept"},
		{"deployment recreate replaces", plan.ClassRecreateRequired, nil, workload("Deployment", map[string]interface{}{"selector": selector}, nil), "every pod replaced"},
		{"no claim templates, no claims to keep", plan.ClassRolling, nil,
			workload("StatefulSet", map[string]interface{}{"selector": selector, "updateStrategy": map[string]interface{}{"type": "OnDelete"}}, nil),
			"0 replaced; pods keep the old template until deleted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := deploymentTarget(tt.class, tt.before, tt.after).expect.String(); got != tt.want {
				t.Errorf("prediction %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEvaluate(t *testing.T) {
	spec := map[string]interface{}{"selector": selector, "replicas": int64(3)}
	done := map[string]interface{}{"replicas": int64(3), "updatedReplicas": int64(3), "readyReplicas": int64(3), "availableReplicas": int64(3),
		"conditions": []interface{}{map[string]interface{}{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
			map[string]interface{}{"type": "Available", "status": "True"}}}
	rolling := map[string]interface{}{"replicas": int64(4), "updatedReplicas": int64(1), "readyReplicas": int64(3), "availableReplicas": int64(3)}
	deadline := map[string]interface{}{"replicas": int64(3), "updatedReplicas": int64(1), "readyReplicas": int64(2),
		"conditions": []interface{}{map[string]interface{}{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
			"message": `ReplicaSet "web-2" has timed out progressing.`}}}
	tests := []struct {
		name   string
		status map[string]interface{}
		pods   []*corev1.Pod
		// ofRevision: the pods of the revision the upgrade produced
		// (nil: all).
		ofRevision  func(*corev1.Pod) bool
		wantState   string
		wantDetail  string
		wantReason  string
		wantTrouble bool
	}{
		{"rolled and ready", done, []*corev1.Pod{pod("web-1", nil)}, nil, plan.StateCurrent, "3/3 updated, 3/3 ready", "", false},
		{"rolling", rolling, []*corev1.Pod{pod("web-1", nil)}, nil, plan.StateInProgress, "1/3 updated, 3/3 ready, 3 old pending termination", "", false},
		{"new pod cannot pull", rolling, []*corev1.Pod{pod("web-1", nil), pod("web-new", waiting("ImagePullBackOff", "Back-off pulling image"))},
			nil, plan.StateFailed, "1/3 updated, 3/3 ready, 3 old pending termination", "pod web-new: image nginx:pull-error cannot be pulled (ImagePullBackOff)", true},
		{"new pod cannot pull, of the new revision", rolling, []*corev1.Pod{pod("web-new", waiting("ImagePullBackOff", "Back-off pulling image"))},
			func(p *corev1.Pod) bool { return p.Name == "web-new" }, plan.StateFailed, "1/3 updated, 3/3 ready, 3 old pending termination", "cannot be pulled", true},
		// A pod broken before the upgrade, which the upgrade replaces:
		// why it is not ready yet, not a failure.
		{"old pod cannot pull, of the revision replaced", rolling, []*corev1.Pod{pod("web-old", waiting("ImagePullBackOff", "Back-off pulling image"))},
			func(p *corev1.Pod) bool { return p.Name == "web-new" }, plan.StateInProgress, "1/3 updated, 3/3 ready, 3 old pending termination",
			"pod web-old (of the revision being replaced): image nginx:pull-error cannot be pulled (ImagePullBackOff): Back-off pulling image", false},
		{"progress deadline", deadline, nil, nil, plan.StateFailed, "1/3 updated, 2/3 ready, 2 old pending termination", "ProgressDeadlineExceeded", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := workload("Deployment", spec, tt.status)
			tg := deploymentTarget(plan.ClassRolling, nil, obj)
			got := evaluate(tg, obj, tt.pods, tt.ofRevision)
			if got.state != tt.wantState || got.detail != tt.wantDetail || !strings.Contains(got.reason, tt.wantReason) || got.trouble != tt.wantTrouble {
				t.Errorf("got %+v, want state %s, detail %q, reason with %q, trouble %v", got, tt.wantState, tt.wantDetail, tt.wantReason, tt.wantTrouble)
			}
		})
	}
}

// TestReplicaWords: a workload's pods in its own terms, never more ready
// (or updated) than desired without why.
func TestReplicaWords(t *testing.T) {
	tests := []struct {
		name    string
		kind    string
		updated bool
		r       replicas
		want    string
	}{
		{"rolled", "Deployment", true, replicas{desired: 3, total: 3, updated: 3, ready: 3}, "3/3 updated, 3/3 ready"},
		{"surge pod up", "Deployment", true, replicas{desired: 2, total: 3, updated: 2, ready: 3}, "2/2 updated, 3 ready, 1 old pending termination"},
		{"rolling", "Deployment", true, replicas{desired: 3, total: 4, updated: 1, ready: 3}, "1/3 updated, 3/3 ready, 3 old pending termination"},
		{"nothing ready yet", "Deployment", true, replicas{desired: 2, total: 2, updated: 2}, "2/2 updated, 0/2 ready"},
		{"scaled down", "Deployment", true, replicas{desired: 2, total: 4, updated: 4, ready: 4}, "4 updated, 4 ready, 2 above the 2 desired, being removed"},
		{"status behind: more ready than pods", "Deployment", true, replicas{desired: 2, total: 2, updated: 2, ready: 3}, "2/2 updated, 3 ready, 1 above the 2 desired, being removed"},
		{"StatefulSet rolling", "StatefulSet", true, replicas{desired: 3, total: 3, updated: 1, ready: 2}, "1/3 updated, 2/3 ready, 2 old to replace"},
		{"DaemonSet rolling", "DaemonSet", true, replicas{desired: 4, total: 4, updated: 3, ready: 4}, "3/4 updated, 4/4 ready, 1 old to replace"},
		{"kept, scaling down", "StatefulSet", false, replicas{desired: 2, total: 3, updated: 0, ready: 3}, "3 ready, 1 above the 2 desired, being removed"},
		{"kept", "StatefulSet", false, replicas{desired: 2, total: 2, ready: 1}, "1/2 ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.words(tt.kind, tt.updated); got != tt.want {
				t.Errorf("%+v: %q, want %q", tt.r, got, tt.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	sts := workload("StatefulSet", map[string]interface{}{"selector": selector, "updateStrategy": map[string]interface{}{"type": "OnDelete"},
		"volumeClaimTemplates": claimTemplates}, nil)
	before := map[string]types.UID{"web-0": "p0", "web-1": "p1"}
	claims := map[string]types.UID{"data-web-0": "c0", "data-web-1": "c1", "other-x-0": "o"}
	podsNow := func(uids ...types.UID) map[string]*corev1.Pod {
		out := map[string]*corev1.Pod{}
		for i, uid := range uids {
			name := "web-" + string(rune('0'+i))
			out[name] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid}}
		}
		return out
	}
	tests := []struct {
		name        string
		pods        map[string]*corev1.Pod
		claimsAfter map[string]types.UID
		want        bool
		observed    string
	}{
		{"kept", podsNow("p0", "p1"), claims, true, "2 of 2 pod(s) kept, 2 of 2 claim(s) kept"},
		{"a pod replaced", podsNow("p0", "new"), claims, false, "1 of 2 pod(s) kept, 2 of 2 claim(s) kept"},
		{"a claim lost", podsNow("p0", "p1"), map[string]types.UID{"data-web-0": "c0", "data-web-1": "new"}, false, "2 of 2 pod(s) kept, 1 of 2 claim(s) kept"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := deploymentTarget(plan.ClassRolling, nil, sts)
			tg.podsBefore = before
			oo := plan.ObjectOutcome{State: plan.StateCurrent}
			tg.check(&oo, tt.pods, claims, tt.claimsAfter)
			if oo.AsPredicted != tt.want || oo.Observed != tt.observed {
				t.Errorf("as predicted %v (%q), want %v (%q)", oo.AsPredicted, oo.Observed, tt.want, tt.observed)
			}
		})
	}
}

func TestTailLines(t *testing.T) {
	tests := []struct {
		name, log, want string
	}{
		{"last three", "a\nb\n\nc\nd\n", "b | c | d"},
		{"fewer", "only\n", "only"},
		{"empty", "\n\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tailLines(tt.log, 3); got != tt.want {
				t.Errorf("tailLines(%q, 3) = %q, want %q", tt.log, got, tt.want)
			}
		})
	}
}

// TestRequests: the watch's cost line counts LISTs and WATCHes per
// resource, sorted by resource.
func TestRequests(t *testing.T) {
	w := &Watcher{}
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	w.requests.add(live.PodsGVR, false)
	w.requests.add(deployments, false)
	w.requests.add(live.PodsGVR, false)
	w.requests.add(live.PodsGVR, true)
	w.requests.add(deployments, true)
	if got, want := w.Requests(), "deployments.apps 1 LIST + 1 WATCH, pods 2 LIST + 1 WATCH"; got != want {
		t.Errorf("Requests() = %q, want %q", got, want)
	}
}
