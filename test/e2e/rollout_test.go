package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// The rollout tests run on the project's control plane, where kwok plays
// the kubelets: pods run, and image tags pull-error, crash and unready fail
// as docs/development.md says. Their waits are the tools' own timeouts
// (helm's --wait, the watch's --watch-timeout), never a clock of the test's.

// webRelease installs Deployment web (3 replicas of image) with helm,
// waiting until its pods are ready, and returns the namespace and the
// UIDs of its pods.
func webRelease(t *testing.T, c *testcluster.Cluster, image string) (string, map[string]types.UID) {
	t.Helper()
	c.RequireOwnCluster(t) // image tags fail only under kwok's stages
	ns := c.Namespace(t)
	c.Helm(t, "install", "app", writeChart(t, "app", "1.0.0", map[string]string{"d.yaml": deployment("web", image, "RollingUpdate", 3)}),
		"-n", ns, "--wait", "--timeout", "5m")
	pods, _ := c.PodsAndClaims(t, ns, "app=web")
	if len(pods) != 3 {
		t.Fatalf("after helm install --wait: pods %v, want 3", pods)
	}
	return ns, pods
}

// outcomeDoc is the outcome section of the JSON document.
type outcomeDoc struct {
	Outcome *struct {
		AsPredicted, Differ, Failed int
		Objects                     []struct {
			Kind, Name, State, Detail, Reason, Predicted, Observed string
			AsPredicted                                            bool
			PodsBefore, PodsKept                                   int
		}
	}
}

// TestRolloutHealthyImageChange: with or without Helm's own wait, the
// pods are replaced, the outcome is as predicted, and the watch costs one
// LIST+WATCH per kind (with --wait, the watch alongside Helm's wait and the
// one after it share them).
func TestRolloutHealthyImageChange(t *testing.T) {
	for _, tt := range []struct {
		name  string
		flags []string
	}{
		{"without Helm's wait", nil},
		{"with --wait", []string{"--wait", "--timeout", "5m"}},
	} {
		t.Run(tt.name, func(t *testing.T) { healthyImageChange(t, tt.flags) })
	}
}

func healthyImageChange(t *testing.T, flags []string) {
	c := testcluster.Get(t)
	ns, before := webRelease(t, c, "nginx:1.25")
	chart := writeChart(t, "app", "1.1.0", map[string]string{"d.yaml": deployment("web", "nginx:1.26", "RollingUpdate", 3)})
	r := run(t, c, append([]string{"app", chart, "-n", ns, "-o", "json", "--debug"}, flags...)...)
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s", r.Code, r.Stderr)
	}
	saysAll(t, "stderr", r.Stderr, "Deployment.apps/"+ns+"/web: current: 3/3 updated, 3/3 ready", "Outcome: 1 as predicted, 0 differ")
	// Cost: the LIST of pods before the apply is the one the watch
	// starts its WATCH from.
	saysAll(t, "the watch's debug line", r.Stderr, "deployments.apps 1 LIST + 1 WATCH, pods 1 LIST + 1 WATCH")
	// When the run ends every pod of before is replaced: gone, or deleted
	// and terminating (kwok removes it moments later, the kubelet after its
	// grace period); the Deployment has 3 pods of the new template.
	pl, err := c.Clientset(t).CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, p := range pl.Items {
		for _, old := range before {
			if p.UID == old && p.DeletionTimestamp == nil {
				t.Errorf("pod %s (UID %s) was there before the upgrade: not replaced", p.Name, p.UID)
			}
		}
		if p.DeletionTimestamp == nil {
			running++
		}
	}
	if running != 3 {
		t.Errorf("pods after, not terminating: %d of %d, want 3", running, len(pl.Items))
	}
	var doc outcomeDoc
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || doc.Outcome == nil {
		t.Fatalf("JSON document without outcome (%v):\n%s", err, r.Stdout)
	}
	o := doc.Outcome
	if o.AsPredicted != 1 || o.Differ != 0 || o.Failed != 0 || len(o.Objects) != 1 {
		t.Fatalf("outcome %+v, want one object as predicted", o)
	}
	if ob := o.Objects[0]; ob.State != "current" || ob.Detail != "3/3 updated, 3/3 ready" || ob.Predicted != "every pod replaced" ||
		ob.Observed != "3 of 3 pod(s) replaced" || ob.PodsBefore != 3 || ob.PodsKept != 0 {
		t.Errorf("outcome of Deployment web: %+v", ob)
	}
}

// TestRolloutFailureReasons: an image change whose new pods cannot start
// exits 1 within the watch's timeout, naming the Deployment and why, on
// stderr and in `helm history`.
func TestRolloutFailureReasons(t *testing.T) {
	tests := []struct {
		name  string
		image string
		args  []string
		state string
		want  []string
	}{
		{"image pull error", "nginx:pull-error", nil, "failed", []string{"nginx:pull-error", "ImagePullBackOff"}},
		{"crash loop", "nginx:crash", nil, "failed", []string{"CrashLoopBackOff", "last exited with code 1"}},
		// Readiness may still come: only the watch's timeout ends it.
		{"never ready", "nginx:unready", []string{"--watch-timeout", "15s"}, "in-progress",
			[]string{"watch timed out after ", "running but not ready (readiness failing)", "Readiness probe failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testcluster.Get(t)
			ns, _ := webRelease(t, c, "nginx:1.25")
			r := run(t, c, append([]string{"app", writeChart(t, "app", "1.1.0", map[string]string{"d.yaml": deployment("web", tt.image, "RollingUpdate", 3)}),
				"-n", ns}, tt.args...)...)
			if r.Code != 1 {
				t.Fatalf("exit %d, want 1\n%s", r.Code, r.Stderr)
			}
			want := append([]string{`release "app" revision 2 was applied, but its rollout failed: `, "Deployment.apps/" + ns + "/web " + tt.state}, tt.want...)
			saysAll(t, "stderr", r.Stderr, want...)
			last := releaseHistory(t, c, ns, 2)[1]
			if last.Status != "failed" || !strings.Contains(last.Description, "Deployment.apps/"+ns+"/web "+tt.state) {
				t.Errorf("revision 2 in helm history: %+v, want failed naming the Deployment", last)
			}
			// Helm's description within its budget (issue 54); the whole
			// reason in the revision's record, which `log` prints.
			if len(last.Description) > 300 {
				t.Errorf("revision 2's description is %d bytes, over its budget: %q", len(last.Description), last.Description)
			}
			saysAll(t, "log", run(t, c, "log", "app", "-n", ns).Stdout, tt.want...)
			if strings.Contains(r.Stderr, "before the upgrade either") {
				t.Errorf("stderr says the Deployment was not ready before the upgrade; it was:\n%s", r.Stderr)
			}
		})
	}
}

// TestRolloutAtomicPullError: under --atomic Helm waits, then rolls back;
// the watch runs alongside Helm's wait, and the error and the failed
// revision in `helm history` say what it saw (the Deployment, the image,
// ImagePullBackOff) and that the release was rolled back, to which
// revision. Nothing is lost: the Deployment runs its old pods.
func TestRolloutAtomicPullError(t *testing.T) {
	c := testcluster.Get(t)
	ns, before := webRelease(t, c, "nginx:1.25")
	r := run(t, c, "app", writeChart(t, "app", "1.1.0", map[string]string{"d.yaml": deployment("web", "nginx:pull-error", "RollingUpdate", 3)}),
		"-n", ns, "--atomic", "--timeout", "20s", "--debug")
	if r.Code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.Code, r.Stderr)
	}
	saysAll(t, "stderr", r.Stderr, "applying revision 2 failed", "rolled back",
		// One LIST each; the WATCHes are started again when a request's
		// --timeout ends them.
		"stage watch (until Helm failed): deployments.apps 1 LIST + ", ", pods 1 LIST + ",
		"the release is now deployed at revision 3: Helm's --atomic rolled the release back to revision 1",
		"the watch saw, while Helm waited: Deployment.apps/"+ns+"/web failed", "image nginx:pull-error cannot be pulled", "ImagePullBackOff")
	if strings.Contains(r.Stderr, "the API server did not answer") {
		t.Errorf("stderr blames the API server for Helm's wait:\n%s", r.Stderr)
	}
	revs := releaseHistory(t, c, ns, 3)
	if failed := revs[1]; failed.Status != "failed" {
		t.Errorf("revision 2 in helm history: %+v, want failed", failed)
	} else {
		saysAll(t, "revision 2's description", failed.Description, "Deployment.apps/"+ns+"/web failed", "nginx:pull-error", "ImagePullBackOff")
	}
	if back := revs[2]; back.Status != "deployed" || back.Description != "Rollback to 1" {
		t.Errorf("revision 3 in helm history: %+v, want deployed, Rollback to 1", back)
	}
	d, err := c.Clientset(t).AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Deployment web after the rollback: %v", err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.25" {
		t.Errorf("Deployment web runs image %s after the rollback, want nginx:1.25", img)
	}
	after, _ := c.PodsAndClaims(t, ns, "app=web")
	keptUIDs(t, "Pod", before, after)
}

// TestRolloutCrashLogSanitised: a crash-looping container's last log lines
// (kwok serves scripts/controlplane/kwok/crash.log as every container's log)
// are in the reason, with the release's Secret value they hold masked, on
// stderr and in `helm history`.
func TestRolloutCrashLogSanitised(t *testing.T) {
	const secret = "kwok-log-secret-4f1c9a" // in crash.log
	c := testcluster.Get(t)
	c.RequireOwnCluster(t)
	ns := c.Namespace(t)
	chart := func(version, image string) string {
		return writeChart(t, "app", version, map[string]string{
			"d.yaml":      deployment("web", image, "RollingUpdate", 2),
			"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: " + secret + "}\n",
		})
	}
	c.Helm(t, "install", "app", chart("1.0.0", "nginx:1.25"), "-n", ns, "--wait", "--timeout", "5m")
	r := run(t, c, "app", chart("1.1.0", "nginx:crash"), "-n", ns)
	if r.Code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.Code, r.Stderr)
	}
	want := []string{"CrashLoopBackOff", "last exited with code 1", "last log lines of container web: ",
		"as app with password (sensitive: hmac-sha256:", `fatal: password authentication failed for user "app"`}
	saysAll(t, "stderr", r.Stderr, want...)
	description := releaseHistory(t, c, ns, 2)[1].Description
	saysAll(t, "revision 2's description", description, want[0])
	// The whole reason, with the log lines, in the revision's record.
	logged := run(t, c, "log", "app", "-n", ns).Stdout
	saysAll(t, "log", logged, want...)
	for what, text := range map[string]string{"stderr": r.Stderr, "revision 2's description": description, "log": logged} {
		if strings.Contains(text, secret) || strings.Contains(text, base64.StdEncoding.EncodeToString([]byte(secret))) {
			t.Errorf("%s holds the Secret value:\n%s", what, text)
		}
	}
}

// TestRolloutFailingHookJob: a pre-upgrade hook Job whose container exits
// 1 fails the upgrade (Helm's doing), and the error says why, from the
// Job's pod: Helm itself only says that the Job failed.
func TestRolloutFailingHookJob(t *testing.T) {
	c := testcluster.Get(t)
	c.RequireOwnCluster(t)
	ns := c.Namespace(t)
	hook := strings.Replace(migrateHook("migrate:crash"), "spec:\n  template:", "spec:\n  backoffLimit: 0\n  template:", 1)
	c.Helm(t, "install", "hooked", writeChart(t, "hooked", "1.0.0", map[string]string{"cm.yaml": configMap(false, "a")}), "-n", ns)
	r := run(t, c, "hooked", writeChart(t, "hooked", "1.1.0", map[string]string{"cm.yaml": configMap(false, "b"), "hook.yaml": hook}), "-n", ns)
	if r.Code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.Code, r.Stderr)
	}
	saysAll(t, "stderr", r.Stderr, "pre-upgrade", "hook Job migrate: pod migrate-", "container migrate last exited with code 1 (Error)",
		`last log lines of container migrate: `, `fatal: password authentication failed for user "app"`)
}

// TestRolloutOnDelete: a StatefulSet with updateStrategy OnDelete whose
// template changes replaces no pod, as the plan predicts.
func TestRolloutOnDelete(t *testing.T) {
	c := testcluster.Get(t)
	c.RequireOwnCluster(t)
	ns := c.Namespace(t)
	sts := func(image string) map[string]string { return kafkaStatefulSet(2, "{type: OnDelete}", image) }
	c.Helm(t, "install", "app", writeChart(t, "app", "1.0.0", sts("kafka:3.7")), "-n", ns, "--wait", "--timeout", "5m")
	before, _ := c.PodsAndClaims(t, ns, "app=kafka")
	r := run(t, c, "app", writeChart(t, "app", "1.1.0", sts("kafka:3.8")), "-n", ns)
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s", r.Code, r.Stderr)
	}
	saysAll(t, "stderr", r.Stderr, []string{
		"StatefulSet.apps/" + ns + "/kafka: current: 0 replaced; pods keep the old template until deleted, 2/2 ready",
		"StatefulSet.apps/" + ns + "/kafka: 2 of 2 pod(s) kept (predicted: 0 replaced; pods keep the old template until deleted)",
		"Outcome: 1 as predicted, 0 differ",
	}...)
	after, _ := c.PodsAndClaims(t, ns, "app=kafka")
	keptUIDs(t, "Pod", before, after)
	if len(before) != 2 {
		t.Errorf("pods before: %v, want 2", before)
	}
}

// TestRolloutPartition: a StatefulSet with rollingUpdate.partition 1 whose
// template changes replaces only the pods with ordinal 1 and above, as the
// plan predicts; pod 0 keeps its UID.
func TestRolloutPartition(t *testing.T) {
	c := testcluster.Get(t)
	c.RequireOwnCluster(t)
	ns := c.Namespace(t)
	sts := func(image string) map[string]string {
		return kafkaStatefulSet(3, "{type: RollingUpdate, rollingUpdate: {partition: 1}}", image)
	}
	c.Helm(t, "install", "app", writeChart(t, "app", "1.0.0", sts("kafka:3.7")), "-n", ns, "--wait", "--timeout", "5m")
	before, _ := c.PodsAndClaims(t, ns, "app=kafka")
	if len(before) != 3 {
		t.Fatalf("pods before: %v, want 3", before)
	}
	r := run(t, c, "app", writeChart(t, "app", "1.1.0", sts("kafka:3.8")), "-n", ns, "-o", "json")
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s", r.Code, r.Stderr)
	}
	saysAll(t, "stderr", r.Stderr,
		"StatefulSet.apps/"+ns+"/kafka: 2 of 2 pod(s) at or above the partition replaced, 1 of 1 below kept (predicted: pods with ordinal 1 and above replaced, the others kept)",
		"Outcome: 1 as predicted, 0 differ")
	after, _ := c.PodsAndClaims(t, ns, "app=kafka")
	for _, name := range []string{"kafka-0", "kafka-1", "kafka-2"} {
		switch kept := after[name] == before[name]; {
		case after[name] == "":
			t.Errorf("pod %s is gone after the upgrade", name)
		case name == "kafka-0" && !kept:
			t.Errorf("pod kafka-0, below the partition, was replaced (UID %s, then %s)", before[name], after[name])
		case name != "kafka-0" && kept:
			t.Errorf("pod %s, at or above the partition, was not replaced (UID %s)", name, after[name])
		}
	}
	var doc outcomeDoc
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || doc.Outcome == nil || len(doc.Outcome.Objects) != 1 {
		t.Fatalf("JSON document without the StatefulSet's outcome (%v):\n%s", err, r.Stdout)
	}
	if ob := doc.Outcome.Objects[0]; !ob.AsPredicted || ob.State != "current" || ob.PodsBefore != 3 || ob.PodsKept != 1 {
		t.Errorf("outcome of StatefulSet kafka: %+v, want current, as predicted, 1 of 3 pods kept", ob)
	}
}

// kafkaStatefulSet is the templates of a chart holding StatefulSet kafka
// with replicas pods of image, updated as updateStrategy (flow YAML) says.
func kafkaStatefulSet(replicas int, updateStrategy, image string) map[string]string {
	return map[string]string{"sts.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: kafka}
spec:
  replicas: %d
  serviceName: kafka
  updateStrategy: %s
  selector: {matchLabels: {app: kafka}}
  template:
    metadata: {labels: {app: kafka}}
    spec: {containers: [{name: kafka, image: %q}]}
`, replicas, updateStrategy, image)}
}

// revision is one line of `helm history -o json`.
type revision struct {
	Revision    int
	Status      string
	Description string
}

// releaseHistory is the history of release app in ns, which must have n
// revisions, oldest first.
func releaseHistory(t *testing.T, c *testcluster.Cluster, ns string, n int) []revision {
	t.Helper()
	history := c.Helm(t, "history", "app", "-n", ns, "-o", "json")
	var revs []revision
	if err := json.Unmarshal([]byte(history), &revs); err != nil || len(revs) != n {
		t.Fatalf("helm history, want %d revision(s): %v\n%s", n, err, history)
	}
	return revs
}

// saysAll fails the test for each of wants that text (named what) does
// not contain.
func saysAll(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s does not say %q:\n%s", what, w, text)
		}
	}
}
