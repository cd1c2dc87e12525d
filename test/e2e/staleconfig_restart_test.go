package e2e

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apply"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// staleDeployments are the staleconfig chart's Deployments and whether
// --restart-stale replaces their pods on a change of value greeting: a
// (envFrom) and b (subPath) by the restart, d by its checksum annotation;
// c reads the whole volume, whose file the kubelet updates.
var staleDeployments = map[string]bool{"a": true, "b": true, "c": false, "d": true}

// TestStaleConfigRestart: with --restart-stale, the plan shows a and b
// restarted (rolling, before the gate), the apply replaces their pods and
// d's and keeps c's, the watch reports the rolls, and the restart's
// annotation is the tool's own field manager's; a second plan of the same
// chart shows no change and no drift; and Helm's next upgrade keeps the
// annotation (no roll of a and b for it).
func TestStaleConfigRestart(t *testing.T) {
	c := testcluster.Get(t)
	ns := staleRelease(t, c, "e2e-restart-pw-1c9d")
	staleRestart(t, c, ns, "e2e-restart-pw-1c9d", func(args ...string) { c.Helm(t, args...) })
}

// TestStaleConfigRestartHelm4: the same on a release Helm 4 installed and
// the tool upgrades with Helm 4's server-side apply, whose next apply
// (manager helm) leaves the restart's annotation to its own manager.
func TestStaleConfigRestartHelm4(t *testing.T) {
	c := testcluster.Get(t)
	c.RequireOwnCluster(t) // pods run under kwok
	const password = "e2e-restart4-pw-8e21"
	ns := c.Namespace(t)
	c.HelmV4(t, "install", "app", staleChart, "-n", ns, "--set", "password="+password, "--wait", "--timeout", "5m")
	staleRestart(t, c, ns, password, func(args ...string) { c.HelmV4(t, args...) })
}

func staleRestart(t *testing.T, c *testcluster.Cluster, ns, password string, helm func(args ...string)) {
	t.Helper()
	args := []string{"app", staleChart, "-n", ns, "--set", "password=" + password, "--set", "greeting=hi"}

	before := len(c.AuditEvents(t, nil))
	p, r := planJSON(t, c, append(args, "--restart-stale", "--detailed-exitcode")...)
	if r.Code != 3 {
		t.Fatalf("plan: exit %d, want 3\n%s", r.Code, r.Stderr)
	}
	if w := toolWrites(t, c, ns, before); len(w) > 0 {
		t.Fatalf("a plan with --restart-stale wrote to the cluster: %+v", w)
	}
	for name, rolls := range staleDeployments {
		ch := p.change(t, "Deployment", name)
		restarted := name == "a" || name == "b"
		if restarted != (len(ch.RestartedFor) > 0) || rolls != (ch.Class == string(plan.ClassRolling)) {
			t.Errorf("Deployment/%s: class %q restartedFor %v, want rolling %v, restarted %v", name, ch.Class, ch.RestartedFor, rolls, restarted)
		}
		if restarted && (ch.RestartedFor[0] != "ConfigMap settings" || !strings.Contains(strings.Join(ch.paths(), " "), plan.RestartedAtPath)) {
			t.Errorf("Deployment/%s: restarted for %v at %v, want ConfigMap settings at %s", name, ch.RestartedFor, ch.paths(), plan.RestartedAtPath)
		}
	}

	pods := map[string]map[string]string{}
	for name := range staleDeployments {
		pods[name] = podUIDs(t, c, ns, name)
	}
	r = run(t, c, append(args, "--restart-stale")...)
	if r.Code != 0 {
		t.Fatalf("apply --restart-stale: exit %d, want 0\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for name, rolls := range staleDeployments {
		if kept := maps.Equal(pods[name], podUIDs(t, c, ns, name)); kept == rolls {
			t.Errorf("Deployment/%s: pods kept %v, want kept %v\n%s", name, kept, !rolls, r.Stdout)
		}
	}
	out := r.Stdout + r.Stderr
	for _, want := range []string{"Restarted Deployment/a (--restart-stale)", "Restarted Deployment/b (--restart-stale)", "Outcome: 4 as predicted, 0 differ",
		"Deployment.apps/" + ns + "/c: 1 of 1 pod(s) started before the upgrade (predicted: no pod replaced; the kubelet updates the files of ConfigMap settings in place)"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the apply's output:\n%s", want, out)
		}
	}
	for _, name := range []string{"a", "b", "d"} {
		if want := "Deployment.apps/" + ns + "/" + name + ": 1 of 1 pod(s) replaced (predicted: every pod replaced)"; !strings.Contains(out, want) {
			t.Errorf("the watch does not report %q:\n%s", want, out)
		}
	}
	for _, name := range []string{"a", "b"} {
		if managers := restartManagers(t, c, ns, name); len(managers) != 1 || managers[0] != apply.RestartManager {
			t.Errorf("Deployment/%s: the restartedAt annotation is managed by %v, want %s alone", name, managers, apply.RestartManager)
		}
	}

	// The same chart again: nothing to change, no drift.
	p, r = planJSON(t, c, append(args, "--detailed-exitcode")...)
	if r.Code != 0 {
		t.Errorf("second plan: exit %d, want 0 (no changes)\n%s", r.Code, r.Stderr)
	}
	for _, ch := range p.Changes {
		if len(ch.Drift) > 0 || ch.Action != string(plan.ActionNoop) {
			t.Errorf("second plan: %s/%s %s with drift %v, want a noop without drift", ch.Kind, ch.Name, ch.Action, ch.Drift)
		}
	}

	// Helm's own next upgrade changes every template (a new image): its
	// patch or apply keeps the annotation it does not manage.
	helm("upgrade", "app", staleChart, "-n", ns, "--set", "password="+password, "--set", "greeting=hi", "--set", "image=registry.example/app:2")
	for _, name := range []string{"a", "b"} {
		if managers := restartManagers(t, c, ns, name); len(managers) != 1 {
			t.Errorf("Deployment/%s: after Helm's next upgrade the restartedAt annotation is managed by %v, want kept by %s", name, managers, apply.RestartManager)
		}
	}
}

// podUIDs are the UIDs of the pods of Deployment name (label app=name) by
// pod name.
func podUIDs(t *testing.T, c *testcluster.Cluster, ns, name string) map[string]string {
	t.Helper()
	got, _ := c.PodsAndClaims(t, ns, "app="+name)
	out := map[string]string{}
	for pod, uid := range got {
		out[pod] = string(uid)
	}
	return out
}

// restartManagers are the field managers owning Deployment name's pod
// template annotation restartedAt; nil when it has none.
func restartManagers(t *testing.T, c *testcluster.Cluster, ns, name string) []string {
	t.Helper()
	d, err := c.Clientset(t).AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Spec.Template.Annotations[plan.RestartedAtAnnotation]; !ok {
		return nil
	}
	var out []string
	for _, f := range d.ManagedFields {
		var fields map[string]interface{}
		if f.FieldsV1 == nil || json.Unmarshal(f.FieldsV1.Raw, &fields) != nil {
			continue
		}
		if strings.Contains(string(f.FieldsV1.Raw), `"f:`+plan.RestartedAtAnnotation+`"`) {
			out = append(out, f.Manager)
		}
	}
	return out
}

// TestStaleConfigRestartSavedPlan: a plan saved with --restart-stale is
// applied with the flag only (refused without it, nothing written), and
// restarts the workloads it recorded.
func TestStaleConfigRestartSavedPlan(t *testing.T) {
	c := testcluster.Get(t)
	const password = "e2e-restart-saved-pw-3f70"
	ns := staleRelease(t, c, password)
	args := []string{"app", staleChart, "-n", ns, "--set", "password=" + password, "--set", "greeting=hi"}
	path := filepath.Join(t.TempDir(), "plan.json")
	if r := run(t, c, append(args, "--restart-stale", "--dry-run", "--plan-out", path, "--plan-unencrypted")...); r.Code != 0 {
		t.Fatalf("--plan-out: exit %d\n%s", r.Code, r.Stderr)
	}
	before := len(c.AuditEvents(t, nil))
	r := run(t, c, append(args, "--plan", path, "--plan-unencrypted")...)
	if r.Code != 1 || !strings.Contains(r.Stderr, "saved plan was made with RestartStale=true") {
		t.Fatalf("--plan without --restart-stale: exit %d, want 1 naming the flag\n%s", r.Code, r.Stderr)
	}
	if w := toolWrites(t, c, ns, before); len(w) > 0 {
		t.Fatalf("a refused saved plan wrote to the cluster: %+v", w)
	}
	pods := map[string]map[string]string{}
	for name := range staleDeployments {
		pods[name] = podUIDs(t, c, ns, name)
	}
	r = run(t, c, append(args, "--plan", path, "--plan-unencrypted", "--restart-stale")...)
	if r.Code != 0 {
		t.Fatalf("--plan --restart-stale: exit %d, want 0\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for name, rolls := range staleDeployments {
		if kept := maps.Equal(pods[name], podUIDs(t, c, ns, name)); kept == rolls {
			t.Errorf("Deployment/%s: pods kept %v, want kept %v", name, kept, !rolls)
		}
	}
}
