package shim

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/testcluster"
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
	dirs := newShimDirs(t, c, realHelm)
	p := &project{c: c, dir: t.TempDir(), ns: c.Namespace(t), bash: bash}
	if err := os.WriteFile(filepath.Join(p.dir, "values.yaml"), []byte("config:\n  greeting: Hello from a desired-state file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.env = env(t, c, []string{dirs.Shim, dirs.Real}, "REL=demo", "NS="+p.ns, "VALUES=values.yaml")
	return p
}

// script runs testdata/NAME with args and the chart given, in the project.
func (p *project) script(t *testing.T, name, chartName string, args ...string) result {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return run(t, p.dir, append(p.env, "CHART="+chart(p.c, chartName)), p.bash, "bash", append([]string{script}, args...)...)
}

// state is what a blocked upgrade must leave as it was.
type state struct {
	StatefulSet types.UID
	Revision    string
}

func (p *project) state(t *testing.T) state {
	t.Helper()
	sts, err := p.c.Clientset(t).AppsV1().StatefulSets(p.ns).Get(t.Context(), "demo-db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := p.c.Clientset(t).CoreV1().Secrets(p.ns).List(t.Context(), metav1.ListOptions{LabelSelector: "owner=helm,name=demo"})
	if err != nil {
		t.Fatal(err)
	}
	revision := ""
	for _, s := range secrets.Items {
		if s.Labels["version"] > revision {
			revision = s.Labels["version"]
		}
	}
	return state{StatefulSet: sts.UID, Revision: revision}
}

// toolWroteSince returns the requests the tool's processes sent since
// audit event index before that changed something in the project's
// namespace (not reads, not dry-runs), and whether it sent any request.
func (p *project) toolWroteSince(t *testing.T, before int) (writes []string, seen bool) {
	t.Helper()
	for _, e := range p.c.AuditEvents(t, nil)[before:] {
		if !strings.HasPrefix(e.UserAgent, "helm-safe-upgrade/") || e.ObjectRef.Namespace != p.ns {
			continue
		}
		seen = true
		if e.Verb != "get" && e.Verb != "list" && e.Verb != "watch" && !strings.Contains(e.RequestURI, "dryRun=All") {
			writes = append(writes, e.Verb+" "+e.RequestURI)
		}
	}
	return writes, seen
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
	testcluster.Eventually(t, "the StatefulSet's pod and claim created", func() (bool, string) {
		pods, claims := c.PodsAndClaims(t, p.ns, "app.kubernetes.io/component=db")
		return len(pods) == 1 && len(claims) == 1, "pods " + strings.Join(keys(pods), ",") + " claims " + strings.Join(keys(claims), ",")
	})
	pods, claims := c.PodsAndClaims(t, p.ns, "app.kubernetes.io/component=db")
	before := p.state(t)
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
		{"CI script: the same with --dry-run", "ci-upgrade.sh", []string{"--dry-run"}},
	} {
		r := p.script(t, tt.script, "demo-v2", tt.args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, "demo-db") || !strings.Contains(r.Stderr, ".safe-upgrade-acks.yaml in the working directory (none found)") {
			t.Errorf("%s: want exit 2, blocked, the StatefulSet named and the ack-file rule on stderr\n%s", tt.name, r)
		}
		if strings.Contains(r.Stdout, "has been upgraded") {
			t.Errorf("%s: stdout says the release was upgraded:\n%s", tt.name, r.Stdout)
		}
	}
	if after := p.state(t); after != before {
		t.Errorf("blocked upgrades changed the release: before %+v, after %+v", before, after)
	}
	if writes, seen := p.toolWroteSince(t, events); len(writes) > 0 || !seen {
		t.Errorf("blocked upgrades: the tool's writes %q (and it sent requests: %v; want none and true)", writes, seen)
	}

	// A dry-run the gate lets through exits 0 and writes nothing either.
	acks := "- kind: StatefulSet\n  namespace: " + p.ns + "\n  name: demo-db\n  reason: claim template grows to 2Gi; reviewed in the pull request\n"
	if err := os.WriteFile(filepath.Join(p.dir, ".safe-upgrade-acks.yaml"), []byte(acks), 0o644); err != nil {
		t.Fatal(err)
	}
	events = len(c.AuditEvents(t, nil))
	if r := p.script(t, "ci-upgrade.sh", "demo-v2", "--dry-run"); r.Code != 0 || r.Stdout != "" {
		t.Errorf("acknowledged --dry-run: want exit 0 and nothing on stdout\n%s", r)
	}
	if after := p.state(t); after != before {
		t.Errorf("--dry-run changed the release: before %+v, after %+v", before, after)
	}
	if writes, _ := p.toolWroteSince(t, events); len(writes) > 0 {
		t.Errorf("--dry-run wrote %q", writes)
	}

	// With the ack file beside the scripts, helmfile sync applies: Helm's
	// lines on stdout, the StatefulSet recreated around its pods and claims.
	r = p.script(t, "helmfile.sh", "demo-v2", "sync")
	if r.Code != 0 || !strings.Contains(r.Stdout, `Release "demo" has been upgraded. Happy Helming!`) || !strings.Contains(r.Stdout, "REVISION: 2") {
		t.Fatalf("helmfile sync with the ack file:\n%s", r)
	}
	podsAfter, claimsAfter := c.PodsAndClaims(t, p.ns, "app.kubernetes.io/component=db")
	if !equalUIDs(pods, podsAfter) || !equalUIDs(claims, claimsAfter) {
		t.Errorf("pods %v -> %v, claims %v -> %v: want the same UIDs", pods, podsAfter, claims, claimsAfter)
	}
	hist := c.Helm(t, "history", "demo", "-n", p.ns, "-o", "json")
	if !strings.Contains(hist, "StatefulSet.apps/"+p.ns+"/demo-db via ack-file") || !strings.Contains(hist, "run by bash through the helm shim") {
		t.Errorf("the release description does not name the ack and the caller:\n%s", hist)
	}
}

func keys(m map[string]types.UID) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func equalUIDs(a, b map[string]types.UID) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
