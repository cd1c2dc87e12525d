package orchestrators

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/proc"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/shimtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// helmsmanProject is a folder holding a Helmsman desired-state file, the
// charts it names (copied: Helmsman runs helm in its own folder), values,
// and once reviewed the ack file.
type helmsmanProject struct {
	c        *testcluster.Cluster
	helmsman string
	dir      string
	env      []string
	context  string
}

func newHelmsmanProject(t *testing.T, c *testcluster.Cluster) *helmsmanProject {
	t.Helper()
	p := &helmsmanProject{c: c, helmsman: helmsman(t), dir: t.TempDir()}
	dirs := tool.Dirs(t, c, c.Helm3)
	// Helmsman switches kubectl's context (kubectl config use-context):
	// a copy of the cluster's kubeconfig keeps the shared one untouched.
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	data, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// Helmsman runs kubectl from PATH too (namespaces, its release labels).
	p.env = shimtest.Env(t, c, []string{dirs.Shim, dirs.Real, filepath.Dir(c.Kubectl)}, "KUBECONFIG="+kubeconfig)
	r := shimtest.Run(t, p.dir, p.env, c.Kubectl, "kubectl", "config", "current-context")
	if r.Code != 0 {
		t.Fatalf("kubectl config current-context: %s", r)
	}
	p.context = strings.TrimSpace(r.Stdout)
	if err := os.WriteFile(filepath.Join(p.dir, "values.yaml"), []byte("config:\n  greeting: Hello from Helmsman\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// write writes desired-state.yaml: release demo of chart chartName (copied
// into charts/ first) in ns, with every namespace of namespaces declared
// (Helmsman looks for its releases only in declared namespaces).
func (p *helmsmanProject) write(t *testing.T, chartName, ns string, namespaces ...string) {
	t.Helper()
	dst := filepath.Join(p.dir, "charts", chartName)
	if _, err := os.Stat(dst); os.IsNotExist(err) {
		if err := os.CopyFS(dst, os.DirFS(shimtest.Chart(p.c, chartName))); err != nil {
			t.Fatal(err)
		}
	}
	version := ""
	for _, line := range strings.Split(readFile(t, filepath.Join(dst, "Chart.yaml")), "\n") {
		if v, ok := strings.CutPrefix(line, "version: "); ok {
			version = strings.TrimSpace(v)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "settings:\n  kubeContext: %q\nnamespaces:\n", p.context)
	for _, n := range append([]string{ns}, namespaces...) {
		fmt.Fprintf(&b, "  %s: {}\n", n)
	}
	fmt.Fprintf(&b, "apps:\n  demo:\n    namespace: %s\n    enabled: true\n    chart: ./charts/%s\n    version: %s\n    valuesFile: values.yaml\n", ns, chartName, version)
	if err := os.WriteFile(filepath.Join(p.dir, "desired-state.yaml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// apply runs helmsman --apply on the desired-state file with args.
func (p *helmsmanProject) apply(t *testing.T, args ...string) proc.Result {
	t.Helper()
	return shimtest.Run(t, p.dir, p.env, p.helmsman, "helmsman", append([]string{"--apply", "-f", "desired-state.yaml"}, args...)...)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestHelmsmanThroughShim runs real Helmsman with the shim first on PATH and
// Helm 3 after it: it installs the demo chart; once the desired-state file
// bumps the chart to the version that grows the StatefulSet's claim template,
// helmsman --apply fails with the gate's verdict in its output and writes
// nothing (same StatefulSet UID, same revision, no write in the audit log),
// also with --force-upgrades, whose --force the shim leaves out, saying so;
// with the ack file beside the desired-state file it applies, and the pods
// and claims keep their UIDs.
func TestHelmsmanThroughShim(t *testing.T) {
	c := testcluster.Get(t)
	p := newHelmsmanProject(t, c)
	ns := c.Namespace(t)

	p.write(t, "demo", ns)
	if r := p.apply(t); r.Code != 0 || !strings.Contains(r.Stdout+r.Stderr, "STATUS: deployed") {
		t.Fatalf("helmsman --apply (install) through the shim:\n%s", r)
	}
	pods, claims := shimtest.WaitForDB(t, c, ns)
	before := shimtest.DemoState(t, c, ns, "demo")
	events := len(c.AuditEvents(t, nil))

	p.write(t, "demo-v2", ns)
	for _, args := range [][]string{nil, {"--force-upgrades"}} {
		r := p.apply(t, args...)
		out := r.Stdout + r.Stderr
		if r.Code == 0 || !strings.Contains(out, "recreate-required") || !strings.Contains(out, "StatefulSet") || !strings.Contains(out, "demo-db") || !strings.Contains(out, "Blocked:") {
			t.Errorf("helmsman --apply %v: want a failure with the gate's verdict naming the StatefulSet\n%s", args, r)
		}
		if len(args) > 0 && !strings.Contains(out, "--force not passed to Helm") {
			t.Errorf("helmsman --apply --force-upgrades: the shim does not say it left --force out\n%s", r)
		}
		if strings.Contains(out, "has been upgraded") {
			t.Errorf("helmsman --apply %v: says the release was upgraded:\n%s", args, r)
		}
	}
	shimtest.CheckUnwritten(t, c, ns, "blocked helmsman runs", before, events)

	shimtest.WriteDemoAcks(t, p.dir, ns)
	if r := p.apply(t); r.Code != 0 || !strings.Contains(r.Stdout+r.Stderr, "REVISION: 2") {
		t.Fatalf("helmsman --apply with the ack file:\n%s", r)
	}
	shimtest.CheckSameUIDs(t, c, ns, pods, claims)
	hist := c.Helm(t, "history", "demo", "-n", ns, "-o", "json")
	if !strings.Contains(hist, "StatefulSet.apps/"+ns+"/demo-db via ack-file") || !strings.Contains(hist, "run by helmsman through the helm shim") {
		t.Errorf("the release description does not name the ack and Helmsman as the caller:\n%s", hist)
	}
}

// TestHelmsmanNamespaceMoveThroughShim: the desired-state file moves a
// release holding a templated claim to another namespace; Helmsman
// uninstalls it from the old one (an untracked release of its own) before it
// installs it in the new one. Through the shim the uninstall is blocked,
// naming the claim in Helmsman's output: the claim keeps its UID, nothing is
// installed in the new namespace. With the claim acknowledged in the ack
// file beside the desired-state file, the move happens.
func TestHelmsmanNamespaceMoveThroughShim(t *testing.T) {
	c := testcluster.Get(t)
	p := newHelmsmanProject(t, c)
	old, moved := c.Namespace(t), c.Namespace(t)

	p.write(t, "shim-verbs", old)
	if r := p.apply(t); r.Code != 0 || !strings.Contains(r.Stdout+r.Stderr, "STATUS: deployed") {
		t.Fatalf("helmsman --apply (install) through the shim:\n%s", r)
	}
	claim, err := c.Clientset(t).CoreV1().PersistentVolumeClaims(old).Get(t.Context(), "demo-data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	p.write(t, "shim-verbs", moved, old)
	r := p.apply(t)
	out := r.Stdout + r.Stderr
	if r.Code == 0 || !strings.Contains(out, "PersistentVolumeClaim/"+old+"/demo-data") || strings.Contains(out, `release "demo" uninstalled`) {
		t.Fatalf("helmsman --apply moving the release: want a failure naming the claim, no uninstall\n%s", r)
	}
	if list := c.Helm(t, "list", "-q", "-n", moved); strings.TrimSpace(list) != "" {
		t.Errorf("the blocked move installed in the new namespace: %q", list)
	}
	if now, err := c.Clientset(t).CoreV1().PersistentVolumeClaims(old).Get(t.Context(), "demo-data", metav1.GetOptions{}); err != nil || now.UID != claim.UID {
		t.Fatalf("the blocked move replaced or deleted the claim: %v", err)
	}

	acks := "- kind: PersistentVolumeClaim\n  namespace: " + old + "\n  name: demo-data\n  reason: moves to the new namespace with a new claim\n"
	if err := os.WriteFile(filepath.Join(p.dir, ".safe-upgrade-acks.yaml"), []byte(acks), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := p.apply(t); r.Code != 0 || !strings.Contains(r.Stdout+r.Stderr, "STATUS: deployed") {
		t.Fatalf("helmsman --apply moving the release with the ack file:\n%s", r)
	}
	if list := c.Helm(t, "list", "-q", "-n", old); strings.TrimSpace(list) != "" {
		t.Errorf("the release is still in the old namespace: %q", list)
	}
	if list := c.Helm(t, "list", "-q", "-n", moved); strings.TrimSpace(list) != "demo" {
		t.Errorf("helm list in the new namespace: %q, want demo", list)
	}
}
