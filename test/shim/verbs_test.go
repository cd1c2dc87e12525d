package shim

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/shimtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestRollbackUninstallThroughShim (issue 34): helm rollback and helm
// uninstall through the drop-in helm, Helm 3 and Helm 4 as the real helm, go through
// the gate. A rollback of an image change applies: Helm's line on stdout,
// history "Rollback to 1". An uninstall, or a rollback, that would delete
// a templated claim is blocked (exit 2, nothing on stdout, no write, the
// release and the claim still there), as Helmsman's namespace-change
// reinstall would be; with the claim acknowledged in the ack file of the
// working directory, the rollback applies, and helm delete (an alias)
// uninstalls and prints Helm's line.
func TestRollbackUninstallThroughShim(t *testing.T) {
	c := testcluster.Get(t)
	for _, real := range []struct {
		name, path string
		run        func(t testing.TB, args ...string) string
	}{
		{"helm3", c.Helm3, c.Helm},
		// Helm 4 applies server-side by default (its rollback through Helm
		// 4's action), and client-side with --server-side=false.
		{"helm4-server-side", c.Helm4, c.HelmV4},
		{"helm4", c.Helm4, func(t testing.TB, args ...string) string {
			if args[0] == "install" || args[0] == "upgrade" {
				args = append(args, "--server-side=false")
			}
			return c.HelmV4(t, args...)
		}},
	} {
		t.Run(real.name, func(t *testing.T) { rollbackUninstall(t, c, real.path, real.run) })
	}
}

// rollbackUninstall is TestRollbackUninstallThroughShim with the real helm
// at realHelm, which run runs directly.
func rollbackUninstall(t *testing.T, c *testcluster.Cluster, realHelm string, run func(t testing.TB, args ...string) string) {
	dirs := tool.Dirs(t, c, realHelm)
	ns, dir := c.Namespace(t), t.TempDir()
	env := shimtest.Env(t, c, []string{dirs.Shim, dirs.Real})
	helm := func(args ...string) result {
		return shimtest.Run(t, dir, env, filepath.Join(dirs.Shim, "helm"), "helm", args...)
	}
	chart := shimtest.Chart(c, "shim-verbs")
	run(t, "install", "app", chart, "-n", ns)
	run(t, "upgrade", "app", chart, "-n", ns, "--set", "image.tag=1.28")
	// "added": revision 2 adds the claim, which a rollback to 1 deletes.
	run(t, "install", "added", chart, "-n", ns, "--set", "data.enabled=false")
	run(t, "upgrade", "added", chart, "-n", ns, "--set", "data.enabled=true")

	r := helm("rollback", "app", "1", "-n", ns)
	if r.Code != 0 || r.Stdout != "Rollback was a success! Happy Helming!\n" {
		t.Fatalf("helm rollback app 1: want exit 0 and Helm's line alone on stdout\n%s", r)
	}
	if hist := run(t, "history", "app", "-n", ns); !strings.Contains(hist, "Rollback to 1") {
		t.Errorf("helm history: want revision 3 \"Rollback to 1\"\n%s", hist)
	}
	cs := c.Clientset(t)
	web, err := cs.AppsV1().Deployments(ns).Get(t.Context(), "app-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := web.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.27" {
		t.Errorf("after the rollback the image is %s, want revision 1's nginx:1.27", img)
	}

	// Unacknowledged, uninstall and its alias are blocked; --dry-run exits 0
	// as Helm's does, and neither writes.
	events := len(c.AuditEvents(t, nil))
	claim := "PersistentVolumeClaim/" + ns + "/app-data"
	for _, args := range [][]string{{"uninstall", "app", "-n", ns}, {"-n", ns, "un", "app"}, {"rollback", "added", "1", "-n", ns}} {
		r := helm(args...)
		want := claim
		if args[0] == "rollback" {
			want = "PersistentVolumeClaim/" + ns + "/added-data"
		}
		if r.Code != 2 || r.Stdout != "" || !strings.Contains(r.Stderr, want) || !strings.Contains(r.Stderr, ".safe-upgrade-acks.yaml in the working directory (none found)") {
			t.Errorf("helm %s without acks: want exit 2, nothing on stdout, the claim and the ack-file rule on stderr\n%s", strings.Join(args, " "), r)
		}
	}
	if r := helm("uninstall", "app", "-n", ns, "--dry-run"); r.Code != 0 || r.Stdout != "" || !strings.Contains(r.Stderr, "exit 0 as helm uninstall --dry-run") {
		t.Errorf("helm uninstall --dry-run, blocked: want exit 0 and nothing on stdout\n%s", r)
	}
	if writes, seen := shimtest.ToolWroteSince(t, c, ns, events); len(writes) > 0 || !seen {
		t.Errorf("blocked uninstalls: the tool's writes %q (and it sent requests: %v; want none and true)", writes, seen)
	}
	if st := run(t, "status", "app", "-n", ns); !strings.Contains(st, "STATUS: deployed") {
		t.Errorf("after the blocked uninstalls: want the release deployed\n%s", st)
	}
	for _, name := range []string{"app-data", "added-data"} {
		if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(t.Context(), name, metav1.GetOptions{}); err != nil {
			t.Fatalf("a blocked command deleted the claim %s: %v", name, err)
		}
	}
	if hist := run(t, "history", "added", "-n", ns); strings.Contains(hist, "Rollback") {
		t.Errorf("the blocked rollback made a revision:\n%s", hist)
	}

	acks := "- kind: PersistentVolumeClaim\n  namespace: " + ns + "\n  name: app-data\n  reason: scratch data; reinstalled in the new namespace\n" +
		"- kind: PersistentVolumeClaim\n  namespace: " + ns + "\n  name: added-data\n  reason: revision 1 had no claim\n"
	if err := os.WriteFile(filepath.Join(dir, ".safe-upgrade-acks.yaml"), []byte(acks), 0o644); err != nil {
		t.Fatal(err)
	}
	r = helm("rollback", "added", "1", "-n", ns)
	if r.Code != 0 || r.Stdout != "Rollback was a success! Happy Helming!\n" {
		t.Fatalf("helm rollback added 1 with the ack file: want exit 0 and Helm's line alone on stdout\n%s", r)
	}
	if hist := run(t, "history", "added", "-n", ns); !strings.Contains(hist, "Rollback to 1") {
		t.Errorf("helm history added: want \"Rollback to 1\"\n%s", hist)
	}
	r = helm("delete", "app", "-n", ns)
	if r.Code != 0 || r.Stdout != "release \"app\" uninstalled\n" {
		t.Fatalf("helm delete app with the ack file: want exit 0 and Helm's line alone on stdout\n%s", r)
	}
	if list := run(t, "list", "-q", "-n", ns); slices.Contains(strings.Fields(list), "app") {
		t.Errorf("helm list after the uninstall: %q, want no release app", list)
	}
	testcluster.Eventually(t, "the claim deleted", func() (bool, string) {
		_, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(t.Context(), "app-data", metav1.GetOptions{})
		return apierrors.IsNotFound(err), "claim: " + errString(err)
	})

	// Gone: an error (exit 1), unless --ignore-not-found, which prints
	// Helm's line as the real helm does.
	if r := helm("uninstall", "app", "-n", ns); r.Code != 1 || r.Stdout != "" || !strings.Contains(r.Stderr, "not found in namespace") {
		t.Errorf("helm uninstall of a release that is gone: want exit 1 and the error\n%s", r)
	}
	real := shimtest.Run(t, dir, env, filepath.Join(dirs.Real, "helm"), "helm", "uninstall", "app", "-n", ns, "--ignore-not-found")
	if r := helm("uninstall", "app", "-n", ns, "--ignore-not-found"); r.Code != 0 || r.Stdout != real.Stdout || real.Code != 0 {
		t.Errorf("helm uninstall --ignore-not-found of a release that is gone: want exit 0 and the real helm's stdout\n=== real\n%s\n=== shim\n%s", real, r)
	}
}

func errString(err error) string {
	if err == nil {
		return "still there"
	}
	return err.Error()
}

// TestHelmsmanReinstallThroughShim: Helmsman's move of a release to another
// namespace (helm uninstall in the old one, then the install in the new)
// through the drop-in helm. The release holds a templated claim: the
// uninstall is blocked naming it, nothing is installed in the new
// namespace and the old release and claim are still there; with the claim
// acknowledged in the ack file beside the desired-state file, the release
// is reinstalled in the new namespace. Real Helmsman makes these two calls
// in make test-orchestrators (TestHelmsmanNamespaceMoveThroughShim), which
// needs its source (HELMSMAN_SRC); this script keeps them in make test.
func TestHelmsmanReinstallThroughShim(t *testing.T) {
	c := testcluster.Get(t)
	p := newProject(t, c, c.Helm3)
	old := c.Namespace(t)
	c.Helm(t, "install", "demo", shimtest.Chart(c, "shim-verbs"), "-n", old)
	p.env = append(p.env, "OLD_NS="+old)

	r := p.script(t, "helmsman.sh", "shim-verbs", "reinstall")
	if r.Code != 2 || !strings.Contains(r.Stderr, "PersistentVolumeClaim/"+old+"/demo-data") || strings.Contains(r.Stdout, "uninstalled") {
		t.Fatalf("helmsman reinstall without acks: want exit 2, the claim named, no uninstall\n%s", r)
	}
	if list := c.Helm(t, "list", "-q", "-n", p.ns); strings.TrimSpace(list) != "" {
		t.Errorf("the blocked reinstall installed in the new namespace: %q", list)
	}
	if _, err := c.Clientset(t).CoreV1().PersistentVolumeClaims(old).Get(t.Context(), "demo-data", metav1.GetOptions{}); err != nil {
		t.Fatalf("the blocked reinstall deleted the claim: %v", err)
	}

	acks := "- kind: PersistentVolumeClaim\n  namespace: " + old + "\n  name: demo-data\n  reason: moves to the new namespace with a new claim\n"
	if err := os.WriteFile(filepath.Join(p.dir, ".safe-upgrade-acks.yaml"), []byte(acks), 0o644); err != nil {
		t.Fatal(err)
	}
	r = p.script(t, "helmsman.sh", "shim-verbs", "reinstall")
	if r.Code != 0 || !strings.Contains(r.Stdout, "release \"demo\" uninstalled\n") || !strings.Contains(r.Stdout, "STATUS: deployed") {
		t.Fatalf("helmsman reinstall with the ack file: want exit 0, uninstalled, then deployed\n%s", r)
	}
	if list := c.Helm(t, "list", "-q", "-n", old); strings.TrimSpace(list) != "" {
		t.Errorf("the release is still in the old namespace: %q", list)
	}
	if list := c.Helm(t, "list", "-q", "-n", p.ns); strings.TrimSpace(list) != "demo" {
		t.Errorf("helm list in the new namespace: %q, want demo", list)
	}
}
