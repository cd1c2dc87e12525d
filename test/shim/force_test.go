package shim

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/shimtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestForceUpgradesThroughShim (issue 39): Helmsman's --force-upgrades
// through the drop-in helm, on the demo chart with its migration Job (whose
// selector the API server generated, so Helm's --force PUT of it fails)
// and a claim template change acknowledged in the ack file. With
// SAFE_UPGRADE_FORCE=keep the --force reaches the plan, which blocks on the
// Job's PUT before anything is written; by default the shim leaves --force
// out, saying so, and the upgrade applies as a plain one: the StatefulSet
// recreated around its pods and claims, the Job untouched, the release
// deployed.
func TestForceUpgradesThroughShim(t *testing.T) {
	c := testcluster.Get(t)
	p := newProject(t, c, c.Helm3)
	if err := os.WriteFile(filepath.Join(p.dir, "values.yaml"), []byte("config:\n  greeting: Hello from a desired-state file\nmigrate:\n  enabled: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := p.script(t, "helmsman.sh", "demo", "apply-force"); r.Code != 0 || !strings.Contains(r.Stdout, "STATUS: deployed") {
		t.Fatalf("helmsman apply --force-upgrades (install) through the shim:\n%s", r)
	}
	pods, claims := shimtest.WaitForDB(t, c, p.ns)
	job, err := c.Clientset(t).BatchV1().Jobs(p.ns).Get(t.Context(), "demo-migrate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	shimtest.WriteDemoAcks(t, p.dir, p.ns)

	// --force kept: the plan replaces every object, and the Job's PUT is
	// refused.
	before, events := shimtest.DemoState(t, c, p.ns, "demo"), len(c.AuditEvents(t, nil))
	env := p.env
	p.env = append(slices.Clone(env), "SAFE_UPGRADE_FORCE=keep")
	r := p.script(t, "helmsman.sh", "demo-v2", "apply-force")
	p.env = env
	if r.Code != 2 || !strings.Contains(r.Stderr, "demo-migrate") || !strings.Contains(r.Stderr, "spec.selector") || strings.Contains(r.Stderr, "not passed to Helm") {
		t.Errorf("SAFE_UPGRADE_FORCE=keep: want exit 2, blocked on the Job's spec.selector\n%s", r)
	}
	shimtest.CheckUnwritten(t, c, p.ns, "--force kept, blocked on the Job", before, events)

	// By default: --force left out, the acknowledged recreate applies.
	r = p.script(t, "helmsman.sh", "demo-v2", "apply-force")
	if r.Code != 0 || !strings.Contains(r.Stdout, `Release "demo" has been upgraded. Happy Helming!`) || !strings.Contains(r.Stdout, "STATUS: deployed") ||
		!strings.Contains(r.Stderr, "helm (safe-upgrade shim): --force not passed to Helm") {
		t.Fatalf("helmsman apply --force-upgrades with the ack file: want exit 0, deployed, and the line saying --force was left out\n%s", r)
	}
	shimtest.CheckSameUIDs(t, c, p.ns, pods, claims)
	after, err := c.Clientset(t).BatchV1().Jobs(p.ns).Get(t.Context(), "demo-migrate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.UID != job.UID || after.Generation != job.Generation {
		t.Errorf("the Job changed: uid %s -> %s, generation %d -> %d; want it untouched (a plain upgrade's noop)", job.UID, after.UID, job.Generation, after.Generation)
	}
	if hist := c.Helm(t, "history", "demo", "-n", p.ns); !strings.Contains(hist, "deployed") || !strings.Contains(hist, "StatefulSet.apps/"+p.ns+"/demo-db via ack-file") {
		t.Errorf("helm history: want revision 2 deployed with the ack\n%s", hist)
	}
}
