package e2e

import (
	"maps"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

const staleChart = "../../testdata/charts/staleconfig"

// staleRelease installs the staleconfig chart (ConfigMap settings read by
// Deployment a through envFrom and env, b through a subPath mount, c
// through the whole volume, d through envFrom with a checksum annotation;
// Secret credentials read by no workload of the chart) with password,
// waiting until the pods run.
func staleRelease(t *testing.T, c *testcluster.Cluster, password string) string {
	t.Helper()
	c.RequireOwnCluster(t) // pods run under kwok
	ns := c.Namespace(t)
	c.Helm(t, "install", "app", staleChart, "-n", ns, "--set", "password="+password, "--wait", "--timeout", "5m")
	return ns
}

// TestStaleConfig: changing one value of a ConfigMap names the readers
// whose running pods keep the old value (a through envFrom, b through a
// subPath mount), the one whose file the kubelet updates (c) and the one
// that rolls (d); it is a pending change (3), blocks with
// --fail-on-stale-config (2, nothing written), and applies (0) rolling d
// alone.
func TestStaleConfig(t *testing.T) {
	c := testcluster.Get(t)
	const password = "e2e-stale-pw-5d1f0a"
	ns := staleRelease(t, c, password)
	args := []string{"app", staleChart, "-n", ns, "--set", "password=" + password, "--set", "greeting=hi"}

	r := run(t, c, append(args, "--dry-run", "--detailed-exitcode")...)
	if r.Code != 3 {
		t.Fatalf("--dry-run --detailed-exitcode: exit %d, want 3\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{
		"1 changed ConfigMap/Secret: running pods of 2 workloads keep its old value until they restart",
		"running pods of Deployment/a keep the old value until they restart (envFrom, container app)",
		"running pods of Deployment/b keep the old value until they restart (subPath mount of key greeting, container app)",
		"Deployment/c: the kubelet updates the file within about a minute; the application must re-read it",
		"Deployment/d picks the change up by rolling",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("no %q in the plan:\n%s", want, r.Stdout)
		}
	}
	if strings.Contains(r.Stdout, "offline:") {
		t.Errorf("a plan against the cluster says its readers are the release's only:\n%s", r.Stdout)
	}

	before := len(c.AuditEvents(t, nil))
	r = run(t, c, append(args, "--fail-on-stale-config")...)
	if r.Code != 2 || !strings.Contains(r.Stderr, "running pods of 2 workloads keep its old value until they restart (--fail-on-stale-config)") {
		t.Fatalf("--fail-on-stale-config: exit %d, want 2 naming the stale readers\n%s", r.Code, r.Stderr)
	}
	if w := toolWrites(t, c, ns, before); len(w) > 0 {
		t.Fatalf("a run blocked by --fail-on-stale-config wrote to the cluster: %+v", w)
	}

	pods := map[string]map[string]string{}
	for _, d := range []string{"a", "b", "c", "d"} {
		got, _ := c.PodsAndClaims(t, ns, "app="+d)
		pods[d] = map[string]string{}
		for name, uid := range got {
			pods[d][name] = string(uid)
		}
	}
	r = run(t, c, args...)
	if r.Code != 0 {
		t.Fatalf("apply: exit %d, want 0\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, d := range []string{"a", "b", "c", "d"} {
		got, _ := c.PodsAndClaims(t, ns, "app="+d)
		after := map[string]string{}
		for name, uid := range got {
			after[name] = string(uid)
		}
		if kept := maps.Equal(pods[d], after); kept == (d == "d") {
			t.Errorf("Deployment/%s: pods %v before, %v after; only d rolls", d, pods[d], after)
		}
	}
	// The outcome follows the readers the upgrade leaves running.
	for _, want := range []string{
		"Outcome: 4 as predicted, 0 differ",
		"Deployment.apps/" + ns + "/a: 1 of 1 pod(s) started before the upgrade: still on the old value (predicted: no pod replaced; running pods keep the old value of ConfigMap settings until they restart)",
		"Deployment.apps/" + ns + "/b: 1 of 1 pod(s) started before the upgrade: still on the old value",
		"Deployment.apps/" + ns + "/c: 1 of 1 pod(s) started before the upgrade (predicted: no pod replaced; the kubelet updates the files",
		"Deployment.apps/" + ns + "/d: 1 of 1 pod(s) replaced (predicted: every pod replaced)",
	} {
		if !strings.Contains(r.Stdout+r.Stderr, want) {
			t.Errorf("no %q in the apply's output:\n%s\n%s", want, r.Stdout, r.Stderr)
		}
	}
	for _, out := range []string{r.Stdout, r.Stderr} {
		if strings.Contains(out, password) {
			t.Errorf("the Secret's value in the output:\n%s", out)
		}
	}
}

// TestStaleConfigRemovedKey: removing key colour, which Deployment a reads
// through env without optional, blocks, naming a and the key.
func TestStaleConfigRemovedKey(t *testing.T) {
	c := testcluster.Get(t)
	ns := staleRelease(t, c, "e2e-stale-pw-77c2")
	before := len(c.AuditEvents(t, nil))
	r := run(t, c, "app", staleChart, "-n", ns, "--set", "password=e2e-stale-pw-77c2", "--set", "withColour=false")
	if r.Code != 2 || !strings.Contains(r.Stdout, "the next pod of Deployment/a that starts fails (CreateContainerConfigError): key colour is read without optional") ||
		!strings.Contains(r.Stderr, "--ack ConfigMap/"+ns+"/settings@") {
		t.Fatalf("exit %d, want 2 naming Deployment/a and key colour\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if w := toolWrites(t, c, ns, before); len(w) > 0 {
		t.Fatalf("a blocked run wrote to the cluster: %+v", w)
	}
}

// TestStaleConfigOutsideReader: a Secret of the release read through env
// by a Deployment outside it, in the same namespace, names that Deployment
// as an outside reader; neither the old value nor the new appears in any
// output form.
func TestStaleConfigOutsideReader(t *testing.T) {
	c := testcluster.Get(t)
	const oldPW, newPW = "e2e-outside-old-9b3e", "e2e-outside-new-41aa"
	ns := staleRelease(t, c, oldPW)
	one := int32(1)
	labels := map[string]string{"app": "outsider"}
	_, err := c.Clientset(t).AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "outsider"},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1", Env: []corev1.EnvVar{{Name: "PASSWORD",
					ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "credentials"}, Key: "password"}}}}}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"app", staleChart, "-n", ns, "--set", "password=" + newPW, "--dry-run"}
	want := "outside the release: running pods of Deployment/outsider keep the old value until they restart (env PASSWORD from key password, container app)"
	for _, format := range []string{"text", "json", "markdown"} {
		r := run(t, c, append(args, "-o", format)...)
		if r.Code != 0 {
			t.Fatalf("-o %s: exit %d\n%s\n%s", format, r.Code, r.Stdout, r.Stderr)
		}
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("-o %s: no %q in:\n%s", format, want, r.Stdout)
		}
		for _, out := range []string{r.Stdout, r.Stderr} {
			if strings.Contains(out, oldPW) || strings.Contains(out, newPW) {
				t.Errorf("-o %s: a Secret value in the output:\n%s", format, out)
			}
		}
	}
	// --restart-stale restarts the release's readers only, and says so.
	r := run(t, c, append(args, "--restart-stale")...)
	if r.Code != 0 || !strings.Contains(r.Stdout, want+"; --restart-stale does not restart it: outside the release") {
		t.Errorf("--restart-stale: exit %d, want 0 and the outside reader not restarted\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
}
