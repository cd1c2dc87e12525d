package e2e

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestRolloutRepairsDrift (issue 39): a Deployment whose template drifted
// to an image that crash-loops (kubectl set image), which the upgrade
// reverts to the chart's: the crash-looping pod is of the revision the
// upgrade replaces, so the run waits for the new revision's pods and
// exits 0, and the revision is deployed, not failed. The template applied
// is that of the ReplicaSet the drift scaled down, which the controller
// scales back up: the outcome predicts its pods kept, and they are.
func TestRolloutRepairsDrift(t *testing.T) {
	c := testcluster.Get(t)
	ns, _ := webRelease(t, c, "nginx:1.25")
	deployments := c.Clientset(t).AppsV1().Deployments(ns)
	drift := `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:crash"}]}}}}`
	if _, err := deployments.Patch(t.Context(), "web", types.StrategicMergePatchType, []byte(drift), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, "a pod of the drifted template crash-looping", func() (bool, string) {
		pods, err := c.Clientset(t).CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" {
					return true, ""
				}
			}
		}
		return false, fmt.Sprintf("%d pods, none crash-looping", len(pods.Items))
	})
	r := run(t, c, "app", writeChart(t, "app", "1.1.0", map[string]string{"d.yaml": deployment("web", "nginx:1.25", "RollingUpdate", 3)}), "-n", ns)
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s", r.Code, r.Stderr)
	}
	saysAll(t, "stderr", r.Stderr, "Deployment.apps/"+ns+"/web: current", "Outcome: 1 as predicted, 0 differ",
		"Deployment.apps/"+ns+"/web: 3 of 3 pod(s) of ReplicaSet web-", "kept, 1 of 1 other(s) replaced (predicted: pods of the earlier ReplicaSet web-")
	if last := releaseHistory(t, c, ns, 2)[1]; last.Status != "deployed" {
		t.Errorf("revision 2 in helm history: %+v, want deployed", last)
	}
	d, err := deployments.Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.25" || d.Status.AvailableReplicas != 3 {
		t.Errorf("Deployment web after the run: image %s, %d available; want nginx:1.25, 3", img, d.Status.AvailableReplicas)
	}
}

// TestRolloutUnreadyBefore (issue 39): a StatefulSet whose pod could not
// be scheduled before the upgrade, and still cannot: the run fails when
// the watch times out, and says that it was not ready before the upgrade
// either, on stderr and in `helm history`.
func TestRolloutUnreadyBefore(t *testing.T) {
	c := testcluster.Get(t)
	c.RequireOwnCluster(t) // kwok's nodes: 4 CPUs each
	ns := c.Namespace(t)
	sts := func(image string) map[string]string {
		return map[string]string{"sts.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: %q, resources: {requests: {cpu: "5"}}}]}
`, image)}
	}
	c.Helm(t, "install", "app", writeChart(t, "app", "1.0.0", sts("postgres:16")), "-n", ns)
	testcluster.Eventually(t, "pod db-0 unschedulable", func() (bool, string) {
		p, err := c.Clientset(t).CoreV1().Pods(ns).Get(t.Context(), "db-0", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Reason == corev1.PodReasonUnschedulable {
				return true, ""
			}
		}
		return false, fmt.Sprintf("conditions %v", p.Status.Conditions)
	})
	r := run(t, c, "app", writeChart(t, "app", "1.1.0", sts("postgres:17")), "-n", ns, "--watch-timeout", "10s")
	if r.Code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.Code, r.Stderr)
	}
	want := []string{`release "app" revision 2 was applied, but its rollout failed: the watch timed out after `,
		"StatefulSet.apps/" + ns + "/db in-progress",
		"pod db-0 (of the revision being replaced) cannot be scheduled (Unschedulable)", "it was not ready before the upgrade either, for the same reason"}
	saysAll(t, "stderr", r.Stderr, want...)
	// Each fact once (issue 54): the pod's condition, not again for its
	// FailedScheduling event or for "not ready before the upgrade".
	saysOnce(t, "stderr", r.Stderr)
	// Helm's description is within its budget, and says where the rest is.
	desc := releaseHistory(t, c, ns, 2)[1].Description
	saysAll(t, "revision 2's description", desc, "Rollout failed after the upgrade: the watch timed out after ", "StatefulSet.apps/"+ns+"/db in-progress")
	if len(desc) > 300 || strings.Count(desc, "0/3 nodes are available") > 1 {
		t.Errorf("revision 2's description (%d bytes) is over its budget or repeats itself: %q", len(desc), desc)
	}
	// The scheduler's reasons, without what its preemption appends to
	// them ("… preemption: 0/3 nodes are available: 3 Preemption is not
	// helpful for scheduling.", issue 42).
	saysAll(t, "stderr", r.Stderr, "cannot be scheduled (Unschedulable): 0/3 nodes are available: 3 Insufficient cpu.")
	if strings.Contains(r.Stderr, "preemption:") {
		t.Errorf("stderr quotes the scheduler's preemption message:\n%s", r.Stderr)
	}
}
