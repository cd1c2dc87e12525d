package shim

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/shimtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// project is a folder like the one holding a helmfile.yaml or a Helmsman
// desired-state file: the scripts run there, values beside them, and the
// ack file, once reviewed, committed there too.
type project struct {
	c    *testcluster.Cluster
	dir  string
	ns   string
	env  []string
	bash string
}

func newProject(t *testing.T, c *testcluster.Cluster, realHelm string) *project {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	dirs := tool.Dirs(t, c, realHelm)
	p := &project{c: c, dir: t.TempDir(), ns: c.Namespace(t), bash: bash}
	if err := os.WriteFile(filepath.Join(p.dir, "values.yaml"), []byte("config:\n  greeting: Hello from a desired-state file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.env = shimtest.Env(t, c, []string{dirs.Shim, dirs.Real}, "REL=demo", "NS="+p.ns, "VALUES=values.yaml")
	return p
}

// script runs testdata/NAME with args and the chart given, in the project.
func (p *project) script(t *testing.T, name, chartName string, args ...string) result {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return shimtest.Run(t, p.dir, append(p.env, "CHART="+shimtest.Chart(p.c, chartName)), p.bash, "bash", append([]string{script}, args...)...)
}

// TestOrchestratorCallsThroughShim makes the calls helmfile and Helmsman
// make, and a CI script's forced upgrade, through the shim with Helm 3 as
// the real helm: the install passes; a chart change that alters the
// StatefulSet's claim template is shown by diff and blocked on every
// upgrade path (nothing written: same StatefulSet, same revision, no write
// in the audit log); with the ack file committed beside them, sync applies
// and the pods and claims keep their UIDs.
func TestOrchestratorCallsThroughShim(t *testing.T) {
	c := testcluster.Get(t)
	p := newProject(t, c, c.Helm3)

	r := p.script(t, "helmfile.sh", "demo", "sync")
	if r.Code != 0 || !strings.Contains(r.Stdout, `Release "demo" does not exist. Installing it now.`) || !strings.Contains(r.Stdout, "STATUS: deployed") {
		t.Fatalf("helmfile sync (install) through the shim:\n%s", r)
	}
	pods, claims := shimtest.WaitForDB(t, c, p.ns)
	before := shimtest.DemoState(t, c, p.ns, "demo")
	events := len(c.AuditEvents(t, nil))

	// helmfile diff and Helmsman's plan: the verdicts, helm-diff's exit codes.
	r = p.script(t, "helmfile.sh", "demo-v2", "diff")
	if r.Code != 2 || !strings.Contains(r.Stdout, "recreate-required") || !strings.Contains(r.Stdout, "demo-db") {
		t.Errorf("helmfile diff: want exit 2 (changes) and the StatefulSet's verdict on stdout\n%s", r)
	}
	r = p.script(t, "helmsman.sh", "demo-v2", "plan")
	if r.Code != 0 || !strings.Contains(r.Stdout, "recreate-required") {
		t.Errorf("helmsman plan: want exit 0 and the verdicts\n%s", r)
	}

	for _, tt := range []struct {
		name, script string
		args         []string
	}{
		{"helmfile apply", "helmfile.sh", []string{"apply"}},
		{"helmfile sync", "helmfile.sh", []string{"sync"}},
		{"helmsman apply --force-upgrades", "helmsman.sh", []string{"apply-force"}},
		{"CI script: upgrade --install --force --wait", "ci-upgrade.sh", nil},
	} {
		r := p.script(t, tt.script, "demo-v2", tt.args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, "demo-db") || !strings.Contains(r.Stderr, ".safe-upgrade-acks.yaml in the working directory (none found)") {
			t.Errorf("%s: want exit 2, blocked, the StatefulSet named and the ack-file rule on stderr\n%s", tt.name, r)
		}
		if strings.Contains(r.Stdout, "has been upgraded") {
			t.Errorf("%s: stdout says the release was upgraded:\n%s", tt.name, r.Stdout)
		}
	}
	// helm upgrade --dry-run is a dry run of a drop-in helm: exit 0 and
	// nothing on stdout even when the upgrade would be blocked; the report
	// on stderr still says what would be.
	for _, dryRun := range []string{"--dry-run", "--dry-run=server"} {
		r := p.script(t, "ci-upgrade.sh", "demo-v2", dryRun)
		if r.Code != 0 || r.Stdout != "" || !strings.Contains(r.Stderr, "recreate-required") || !strings.Contains(r.Stderr, "demo-db") ||
			!strings.Contains(r.Stderr, "exit 0 as helm upgrade --dry-run, though the upgrade itself would be blocked as above") {
			t.Errorf("CI script with %s, upgrade blocked: want exit 0, nothing on stdout, the StatefulSet's verdict and the would-be-blocked line on stderr\n%s", dryRun, r)
		}
	}
	shimtest.CheckUnwritten(t, c, p.ns, "blocked upgrades", before, events)

	// A dry-run the gate lets through exits 0 and writes nothing either.
	shimtest.WriteDemoAcks(t, p.dir, p.ns)
	events = len(c.AuditEvents(t, nil))
	if r := p.script(t, "ci-upgrade.sh", "demo-v2", "--dry-run"); r.Code != 0 || r.Stdout != "" {
		t.Errorf("acknowledged --dry-run: want exit 0 and nothing on stdout\n%s", r)
	}
	shimtest.CheckUnwritten(t, c, p.ns, "acknowledged --dry-run", before, events)

	// With the ack file beside the scripts, helmfile sync applies: Helm's
	// lines on stdout, the StatefulSet recreated around its pods and claims.
	r = p.script(t, "helmfile.sh", "demo-v2", "sync")
	if r.Code != 0 || !strings.Contains(r.Stdout, `Release "demo" has been upgraded. Happy Helming!`) || !strings.Contains(r.Stdout, "REVISION: 2") {
		t.Fatalf("helmfile sync with the ack file:\n%s", r)
	}
	shimtest.CheckSameUIDs(t, c, p.ns, pods, claims)
	hist := c.Helm(t, "history", "demo", "-n", p.ns, "-o", "json")
	if !strings.Contains(hist, "StatefulSet.apps/"+p.ns+"/demo-db via ack-file") || !strings.Contains(hist, "run by bash through the helm shim") {
		t.Errorf("the release description does not name the ack and the caller:\n%s", hist)
	}
}
