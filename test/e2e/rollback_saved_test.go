package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestRollbackSavedPlan: a rollback's plan saved with --plan-out (its
// claim's delete acknowledged) applies with --plan alone, exactly that
// rollback; the saved plan pins the operation: the upgrade command
// refuses it, and once applied the release moved, so it is refused again.
func TestRollbackSavedPlan(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	cm := func(v string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {v: \"" + v + "\"}\n"
	}
	v1 := writeChart(t, "app", "1.0.0", map[string]string{"cm.yaml": cm("1")})
	c.Helm(t, "install", "app", v1, "-n", ns)
	c.Helm(t, "upgrade", "app", writeChart(t, "app", "1.1.0", map[string]string{"cm.yaml": cm("2"), "pvc.yaml": guardVolumeChart["pvc.yaml"]}), "-n", ns)
	file := filepath.Join(t.TempDir(), "rollback.plan")
	acks := destructiveAcks(t, c, 1, "rollback", "app", "1", "-n", ns)

	before := auditMark(t, c)
	r := run(t, c, append([]string{"rollback", "app", "1", "-n", ns, "--dry-run", "--plan-out", file, "--plan-unencrypted"}, acks...)...)
	if r.Code != 0 || !strings.Contains(r.Stderr+r.Stdout, "Plan saved to "+file) {
		t.Fatalf("rollback --dry-run --plan-out: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	assertOnlyDryRunWrites(t, c, ns, before)

	if r := run(t, c, "app", v1, "-n", ns, "--plan", file, "--plan-unencrypted"); r.Code != 1 || !strings.Contains(r.Stderr, "saved plan is of a rollback to revision 1, not of an upgrade") {
		t.Errorf("the rollback's plan applied by upgrade: exit %d, want 1 refusing it\n%s", r.Code, r.Stderr)
	}
	if r := run(t, c, "rollback", "app", "-n", ns, "--plan", file, "--plan-unencrypted"); r.Code != 0 {
		// REVISION left out is the one before the last: 1 here too.
		t.Fatalf("rollback --plan: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if h := c.Helm(t, "history", "app", "-n", ns); !strings.Contains(h, "Rollback to 1") {
		t.Errorf("helm history lacks the rollback:\n%s", h)
	}
	gone(t, c, "-n", ns, "pvc", "files")
	if r := run(t, c, "rollback", "app", "1", "-n", ns, "--plan", file, "--plan-unencrypted"); r.Code != 1 || !strings.Contains(r.Stderr, "moved from revision 2 to 3") {
		t.Errorf("the saved plan applied twice: exit %d, want 1 (the release moved)\n%s", r.Code, r.Stderr)
	}
}
