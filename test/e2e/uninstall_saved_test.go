package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestUninstallSavedPlan: an uninstall's plan saved with --plan-out (its
// claim's data loss acknowledged) applies with --plan alone; it is refused
// by the upgrade command, with other uninstall flags, and once an object it
// deletes changed in the cluster (nothing deleted).
func TestUninstallSavedPlan(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	chart := writeChart(t, "app", "1.0.0", map[string]string{"pvc.yaml": guardVolumeChart["pvc.yaml"], "cm.yaml": guardVolumeChart["cm.yaml"]})
	c.Helm(t, "install", "app", chart, "-n", ns)
	dir := t.TempDir()
	save := func(file string) {
		t.Helper()
		acks := destructiveAcks(t, c, 1, "uninstall", "app", "-n", ns)
		before := auditMark(t, c)
		r := run(t, c, append([]string{"uninstall", "app", "-n", ns, "--dry-run", "--plan-out", file, "--plan-unencrypted"}, acks...)...)
		if r.Code != 0 || !strings.Contains(r.Stderr+r.Stdout, "Plan saved to "+file) {
			t.Fatalf("uninstall --dry-run --plan-out: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		assertOnlyDryRunWrites(t, c, ns, before)
	}
	first := filepath.Join(dir, "first.plan")
	save(first)

	before := auditMark(t, c)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"by the upgrade command", []string{"app", chart, "-n", ns}, "saved plan is of an uninstall, not of an upgrade"},
		{"with other flags", []string{"uninstall", "app", "-n", ns, "--keep-history"}, "saved plan was made with KeepHistory=false"},
	} {
		if r := run(t, c, append(tc.args, "--plan", first, "--plan-unencrypted")...); r.Code != 1 || !strings.Contains(r.Stderr, tc.want) {
			t.Errorf("the uninstall's plan applied %s: exit %d, want 1 saying %q\n%s", tc.name, r.Code, tc.want, r.Stderr)
		}
	}
	mustBin(t, c, c.Kubectl, "annotate", "-n", ns, "configmap", "settings", "example.com/touched=yes")
	if r := run(t, c, "uninstall", "app", "-n", ns, "--plan", first, "--plan-unencrypted"); r.Code != 1 || !strings.Contains(r.Stderr, "ConfigMap/"+ns+"/settings changed in the cluster since the plan") {
		t.Errorf("the saved plan after its ConfigMap changed: exit %d, want 1 (stale)\n%s", r.Code, r.Stderr)
	}
	assertOnlyDryRunWrites(t, c, ns, before)

	second := filepath.Join(dir, "second.plan")
	save(second)
	if r := run(t, c, "uninstall", "app", "-n", ns, "--plan", second, "--plan-unencrypted"); r.Code != 0 {
		t.Fatalf("uninstall --plan: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	gone(t, c, "-n", ns, "pvc", "files")
	if out, err := c.HelmErr("status", "app", "-n", ns); err == nil {
		t.Errorf("helm status after the uninstall: the release is still there\n%s", out)
	}
}
