package orchestrators

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/proc"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/shimtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// helmfileProject is a folder holding a helmfile.yaml with the demo chart's
// release, its values beside it, and once reviewed the ack file too.
type helmfileProject struct {
	c        *testcluster.Cluster
	helmfile string
	dir, ns  string
	env      []string
}

// writeHelmfile writes helmfile.yaml with the release of chart chartName,
// copied into the project's charts/ first: helmfile runs helm dependency
// build in a local chart's folder, which must not be the repository's.
func (p *helmfileProject) writeHelmfile(t *testing.T, chartName string) {
	t.Helper()
	dst := filepath.Join(p.dir, "charts", chartName)
	if _, err := os.Stat(dst); os.IsNotExist(err) {
		if err := os.CopyFS(dst, os.DirFS(shimtest.Chart(p.c, chartName))); err != nil {
			t.Fatal(err)
		}
	}
	doc := fmt.Sprintf("releases:\n  - name: demo\n    namespace: %s\n    chart: ./charts/%s\n    values:\n      - values.yaml\n", p.ns, chartName)
	if err := os.WriteFile(filepath.Join(p.dir, "helmfile.yaml"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs helmfile with args in the project's folder, helm being the
// shim first on PATH.
func (p *helmfileProject) run(t *testing.T, args ...string) proc.Result {
	t.Helper()
	return shimtest.Run(t, p.dir, p.env, p.helmfile, "helmfile", args...)
}

// TestHelmfileThroughShim runs real helmfile with the shim first on PATH
// and Helm 3 after it: helmfile sync installs; once the chart changes the
// StatefulSet's claim template, helmfile diff shows the verdicts with
// helmfile's exit code for changes, helmfile apply and helmfile sync fail
// naming the StatefulSet and write nothing (same StatefulSet UID, same
// revision, no write in the audit log); with the ack file committed beside
// helmfile.yaml, helmfile sync applies and the pods and claims keep their
// UIDs.
func TestHelmfileThroughShim(t *testing.T) {
	helmfile := helmfile(t)
	c := testcluster.Get(t)
	dirs := tool.Dirs(t, c, c.Helm3)
	p := &helmfileProject{c: c, helmfile: helmfile, dir: t.TempDir(), ns: c.Namespace(t)}
	p.env = shimtest.Env(t, c, []string{dirs.Shim, dirs.Real})
	if err := os.WriteFile(filepath.Join(p.dir, "values.yaml"), []byte("config:\n  greeting: Hello from helmfile\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	p.writeHelmfile(t, "demo")
	if r := p.run(t, "sync"); r.Code != 0 || !strings.Contains(r.Stdout+r.Stderr, "STATUS: deployed") {
		t.Fatalf("helmfile sync (install) through the shim:\n%s", r)
	}
	pods, claims := shimtest.WaitForDB(t, c, p.ns)
	before := shimtest.DemoState(t, c, p.ns, "demo")
	events := len(c.AuditEvents(t, nil))

	p.writeHelmfile(t, "demo-v2")
	// helmfile diff --detailed-exitcode: 2 means changes.
	r := p.run(t, "diff", "--detailed-exitcode")
	if r.Code != 2 || !strings.Contains(r.Stdout, "recreate-required") || !strings.Contains(r.Stdout, "demo-db") {
		t.Errorf("helmfile diff --detailed-exitcode: want exit 2 (changes) and the StatefulSet's verdict on stdout\n%s", r)
	}
	for _, cmd := range []string{"apply", "sync"} {
		r := p.run(t, cmd)
		out := r.Stdout + r.Stderr
		if r.Code == 0 || !strings.Contains(out, "demo-db") || !strings.Contains(out, "Blocked:") {
			t.Errorf("helmfile %s: want a failure with the gate's report naming the StatefulSet\n%s", cmd, r)
		}
		if strings.Contains(out, "has been upgraded") {
			t.Errorf("helmfile %s: says the release was upgraded:\n%s", cmd, r)
		}
	}
	shimtest.CheckUnwritten(t, c, p.ns, "blocked helmfile runs", before, events)

	// The ack file, reviewed and committed beside helmfile.yaml.
	shimtest.WriteDemoAcks(t, p.dir, p.ns)
	r = p.run(t, "sync")
	if r.Code != 0 || !strings.Contains(r.Stdout+r.Stderr, "REVISION: 2") {
		t.Fatalf("helmfile sync with the ack file:\n%s", r)
	}
	shimtest.CheckSameUIDs(t, c, p.ns, pods, claims)
	hist := c.Helm(t, "history", "demo", "-n", p.ns, "-o", "json")
	if !strings.Contains(hist, "StatefulSet.apps/"+p.ns+"/demo-db via ack-file") || !strings.Contains(hist, "run by helmfile through the helm shim") {
		t.Errorf("the release description does not name the ack and helmfile as the caller:\n%s", hist)
	}
}
