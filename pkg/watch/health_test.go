package watch

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// object is a live object of any kind, named web in namespace ns, at
// generation 2.
func object(apiVersion, kind string, spec, st map[string]interface{}) *unstructured.Unstructured {
	o := workload(kind, spec, st)
	o.SetAPIVersion(apiVersion)
	return o
}

// TestHealth: Check judges every kind the watch follows, with no target
// and no plan, in the watch's words.
func TestHealth(t *testing.T) {
	spec := map[string]interface{}{"selector": selector, "replicas": int64(3)}
	done := map[string]interface{}{"replicas": int64(3), "updatedReplicas": int64(3), "readyReplicas": int64(3), "availableReplicas": int64(3),
		"conditions": []interface{}{map[string]interface{}{"type": "Available", "status": "True"}}}
	rolling := map[string]interface{}{"replicas": int64(4), "updatedReplicas": int64(1), "readyReplicas": int64(3), "availableReplicas": int64(3)}
	crashing := func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", RestartCount: 4,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
	}
	unschedulable := func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
			Message: "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available."}}
	}
	revision := func(rev string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Labels[revisionHashLabel] = rev }
	}
	stsRolling := map[string]interface{}{"replicas": int64(3), "updatedReplicas": int64(1), "readyReplicas": int64(2), "currentReplicas": int64(2),
		"currentRevision": "web-1", "updateRevision": "web-2"}
	job := map[string]interface{}{"active": int64(1)}
	jobFailed := map[string]interface{}{"failed": int64(3), "conditions": []interface{}{
		map[string]interface{}{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}}}
	claim := func(phase string) *unstructured.Unstructured {
		return object("v1", "PersistentVolumeClaim", map[string]interface{}{"storageClassName": "local"}, map[string]interface{}{"phase": phase})
	}
	lb := object("v1", "Service", map[string]interface{}{"type": "LoadBalancer", "clusterIP": "10.0.0.1"}, map[string]interface{}{})
	crd := object("apiextensions.k8s.io/v1", "CustomResourceDefinition", map[string]interface{}{}, map[string]interface{}{"conditions": []interface{}{
		map[string]interface{}{"type": "Established", "status": "True"}, map[string]interface{}{"type": "NamesAccepted", "status": "True"}}})
	tests := []struct {
		name        string
		obj         *unstructured.Unstructured
		pods        []*corev1.Pod
		wantState   string
		wantDetail  string
		wantReason  string
		wantTrouble bool
	}{
		{"not found", nil, nil, plan.StateInProgress, "not found", "", false},
		{"deployment current", workload("Deployment", spec, done), []*corev1.Pod{pod("web-1", nil)}, plan.StateCurrent, "3/3 updated, 3/3 ready", "", false},
		{"deployment rolling", workload("Deployment", spec, rolling), nil, plan.StateInProgress, "1/3 updated, 3/3 ready, 3 old pending termination", "", false},
		{"image pull", workload("Deployment", spec, rolling), []*corev1.Pod{pod("web-2", waiting("ImagePullBackOff", "Back-off pulling image"))},
			plan.StateFailed, "1/3 updated, 3/3 ready, 3 old pending termination", "pod web-2: image nginx:pull-error cannot be pulled (ImagePullBackOff)", true},
		{"crash loop", workload("Deployment", spec, rolling), []*corev1.Pod{pod("web-2", crashing)},
			plan.StateFailed, "1/3 updated, 3/3 ready, 3 old pending termination", "container web is crash-looping (CrashLoopBackOff, restarted 4 time(s))", true},
		{"unschedulable waits", workload("Deployment", spec, rolling), []*corev1.Pod{pod("web-2", unschedulable)},
			plan.StateInProgress, "1/3 updated, 3/3 ready, 3 old pending termination", "pod web-2 cannot be scheduled (Unschedulable): 0/1 nodes are available: 1 Insufficient cpu.", true},
		{"another workload's pod", workload("Deployment", spec, rolling), []*corev1.Pod{pod("db-0", func(p *corev1.Pod) {
			p.Labels = map[string]string{"app": "db"}
			crashing(p)
		})}, plan.StateInProgress, "1/3 updated, 3/3 ready, 3 old pending termination", "", false},
		// The StatefulSet's status tells its revision: a crash loop of a
		// pod it replaces is why it is not ready, not its failure.
		{"statefulset, old revision crashing", workload("StatefulSet", spec, stsRolling), []*corev1.Pod{pod("web-0", func(p *corev1.Pod) { revision("web-1")(p); crashing(p) })},
			plan.StateInProgress, "1/3 updated, 2/3 ready, 2 old to replace", "pod web-0 (of the revision being replaced): container web is crash-looping", false},
		{"statefulset, new revision crashing", workload("StatefulSet", spec, stsRolling), []*corev1.Pod{pod("web-2", func(p *corev1.Pod) { revision("web-2")(p); crashing(p) })},
			plan.StateFailed, "1/3 updated, 2/3 ready, 2 old to replace", "pod web-2: container web is crash-looping", true},
		{"job running, pod crashing: its backoff limit decides", object("batch/v1", "Job", map[string]interface{}{"selector": selector}, job),
			[]*corev1.Pod{pod("web-x", crashing)}, plan.StateInProgress, "1 active, 0 succeeded, 0 failed", "crash-looping", true},
		{"job failed", object("batch/v1", "Job", map[string]interface{}{"selector": selector}, jobFailed), nil,
			plan.StateFailed, "0 active, 0 succeeded, 3 failed", "(JobFailed)", true},
		{"claim bound", claim("Bound"), nil, plan.StateCurrent, "", "", false},
		{"claim unbound", claim("Pending"), nil, plan.StateInProgress, "not bound", "StorageClass local has not bound it yet", false},
		{"service", lb, nil, plan.StateCurrent, "", "", false},
		{"crd established", crd, nil, plan.StateCurrent, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(tt.obj, tt.pods)
			if got.State != tt.wantState || got.Detail != tt.wantDetail || !strings.Contains(got.Reason, tt.wantReason) || got.Trouble != tt.wantTrouble {
				t.Errorf("got %+v, want state %s, detail %q, reason with %q, trouble %v", got, tt.wantState, tt.wantDetail, tt.wantReason, tt.wantTrouble)
			}
			if strings.Contains(got.String(), "\n") {
				t.Errorf("String() %q is more than one line", got.String())
			}
		})
	}
}

// TestCheckClaim: an unbound claim, judged with its StorageClass's
// binding mode.
func TestCheckClaim(t *testing.T) {
	claim := object("v1", "PersistentVolumeClaim", map[string]interface{}{"storageClassName": "local"}, map[string]interface{}{"phase": "Pending"})
	tests := []struct {
		name       string
		mode       string
		err        error
		wantState  string
		wantReason string
	}{
		{"binds on first use", "WaitForFirstConsumer", nil, plan.StateCurrent, ""},
		{"binds at once", "Immediate", nil, plan.StateInProgress, "StorageClass local binds at once (Immediate), and has not yet"},
		{"no such class", "", nil, plan.StateInProgress, "StorageClass local does not exist"},
		{"classes unreadable", "", errors.New("forbidden"), plan.StateInProgress, "StorageClass local cannot be read: forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckClaim(claim, func(string) (string, error) { return tt.mode, tt.err })
			if got.State != tt.wantState || got.Reason != tt.wantReason || !strings.HasPrefix(got.Detail, "not bound") {
				t.Errorf("got %+v, want state %s, reason %q", got, tt.wantState, tt.wantReason)
			}
		})
	}
}
