// Package shimtest holds what the tests that run the drop-in helm as
// orchestrators and scripts do share (test/shim with scripts that make
// their calls, test/orchestrators with real helmfile): the shim and the real
// helm laid out on PATH, their environment, and what a blocked upgrade must
// leave as it was.
package shimtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/proc"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/toolbuild"
)

// Version is the version the shim's binary is built with.
const Version = "9.9.9-shim"

// Run runs the executable at path, as argv0, with args in dir with env; a
// non-zero exit is a result, a command that cannot start fails the test. No
// time limit: the test binary's -timeout bounds it.
func Run(t *testing.T, dir string, env []string, path, argv0 string, args ...string) proc.Result {
	t.Helper()
	x := exec.Command(path, args...)
	x.Args[0] = argv0
	x.Dir, x.Env = dir, env
	r, err := proc.Run(x)
	if err != nil {
		t.Fatalf("%s %s: %v", path, strings.Join(args, " "), err)
	}
	return r
}

// Tool is the tool's binary, built once per test binary (a test package
// holds one Tool).
type Tool struct {
	once       sync.Once
	dispatcher string
	err        error
}

// Dirs is a PATH layout: Shim holds helm, a link to the dispatcher built
// beside the tool's binary (as `shim install` makes it);
// Real holds helm, a link to the real helm (v3 or v4).
type Dirs struct {
	Shim, Real string
}

// Dirs builds the tool (once) and lays out the shim and the real helm
// realHelm in folders of their own.
func (b *Tool) Dirs(t *testing.T, c *testcluster.Cluster, realHelm string) Dirs {
	t.Helper()
	b.once.Do(func() {
		_, b.dispatcher, b.err = toolbuild.BuildShim(c.Root, filepath.Join(c.Root, ".cache", "shim-test"), Version, "5h1m")
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	d := Dirs{Shim: filepath.Join(t.TempDir(), "shim"), Real: filepath.Join(t.TempDir(), "real")}
	for dir, target := range map[string]string{d.Shim: b.dispatcher, d.Real: realHelm} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, "helm")); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// Env returns the cluster's environment (without SAFE_UPGRADE_*) with PATH
// set to dirs followed by the system's folders (bash, grep), fresh helm
// homes, and kv added.
func Env(t *testing.T, c *testcluster.Cluster, dirs []string, kv ...string) []string {
	t.Helper()
	var out []string
	for _, e := range c.Env() {
		if !strings.HasPrefix(e, "PATH=") && !strings.HasPrefix(e, "SAFE_UPGRADE_") {
			out = append(out, e)
		}
	}
	out = append(out, "PATH="+strings.Join(append(dirs, "/usr/bin", "/bin"), string(os.PathListSeparator)))
	out = append(out, HelmHome(t.TempDir())...)
	return append(out, kv...)
}

// HelmHome is the environment that gives helm its homes (config, cache,
// data, plugins) under dir.
func HelmHome(dir string) []string {
	return []string{
		"HELM_CACHE_HOME=" + filepath.Join(dir, "cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(dir, "config"),
		"HELM_DATA_HOME=" + filepath.Join(dir, "data"),
		"HELM_PLUGINS=" + filepath.Join(dir, "data", "plugins"),
	}
}

// Chart returns the path of a chart under testdata/charts.
func Chart(c *testcluster.Cluster, name string) string {
	return filepath.Join(c.Root, "testdata", "charts", name)
}

// State is what a blocked upgrade of the demo chart's release must leave as
// it was: its StatefulSet's UID and its latest revision.
type State struct {
	StatefulSet types.UID
	Revision    string
}

// DemoState returns the State of the demo chart's release named release in ns.
func DemoState(t *testing.T, c *testcluster.Cluster, ns, release string) State {
	t.Helper()
	sts, err := c.Clientset(t).AppsV1().StatefulSets(ns).Get(t.Context(), release+"-db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := c.Clientset(t).CoreV1().Secrets(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + release})
	if err != nil {
		t.Fatal(err)
	}
	revision := ""
	for _, s := range secrets.Items {
		if v := s.Labels["version"]; len(v) > len(revision) || len(v) == len(revision) && v > revision {
			revision = v
		}
	}
	return State{StatefulSet: sts.UID, Revision: revision}
}

// ToolWroteSince returns the requests the tool's processes sent since audit
// event index before that changed something in ns (not reads, not
// dry-runs), and whether they sent any request there at all.
func ToolWroteSince(t *testing.T, c *testcluster.Cluster, ns string, before int) (writes []string, seen bool) {
	t.Helper()
	for _, e := range c.AuditEvents(t, nil)[before:] {
		if !strings.HasPrefix(e.UserAgent, "helm-safe-upgrade/") || e.ObjectRef.Namespace != ns {
			continue
		}
		seen = true
		if e.Verb != "get" && e.Verb != "list" && e.Verb != "watch" && !strings.Contains(e.RequestURI, "dryRun=All") {
			writes = append(writes, e.Verb+" "+e.RequestURI)
		}
	}
	return writes, seen
}

// WaitForDB waits until the demo chart's StatefulSet in ns has its pod and
// claim, and returns their UIDs by name.
func WaitForDB(t *testing.T, c *testcluster.Cluster, ns string) (pods, claims map[string]types.UID) {
	t.Helper()
	testcluster.Eventually(t, "the StatefulSet's pod and claim created", func() (bool, string) {
		pods, claims := c.PodsAndClaims(t, ns, dbPods)
		return len(pods) == 1 && len(claims) == 1, "pods " + strings.Join(keys(pods), ",") + " claims " + strings.Join(keys(claims), ",")
	})
	return c.PodsAndClaims(t, ns, dbPods)
}

// dbPods selects the demo chart's StatefulSet's pods.
const dbPods = "app.kubernetes.io/component=db"

// CheckUnwritten checks that what (blocked or dry-run upgrades) left the
// demo chart's release in ns as it was: the same State as before, and no
// write by the tool since audit event index events (though it sent
// requests, so the check can fail).
func CheckUnwritten(t *testing.T, c *testcluster.Cluster, ns, what string, before State, events int) {
	t.Helper()
	if after := DemoState(t, c, ns, "demo"); after != before {
		t.Errorf("%s changed the release: before %+v, after %+v", what, before, after)
	}
	if writes, seen := ToolWroteSince(t, c, ns, events); len(writes) > 0 || !seen {
		t.Errorf("%s: the tool's writes %q (and it sent requests: %v; want none and true)", what, writes, seen)
	}
}

// CheckSameUIDs checks that the demo chart's StatefulSet's pods and claims
// in ns are still pods and claims (by name and UID).
func CheckSameUIDs(t *testing.T, c *testcluster.Cluster, ns string, pods, claims map[string]types.UID) {
	t.Helper()
	podsAfter, claimsAfter := c.PodsAndClaims(t, ns, dbPods)
	if !equalUIDs(pods, podsAfter) || !equalUIDs(claims, claimsAfter) {
		t.Errorf("pods %v -> %v, claims %v -> %v: want the same UIDs", pods, podsAfter, claims, claimsAfter)
	}
}

// WriteDemoAcks writes the ack file a reviewer commits for the demo chart's
// claim template change (demo → demo-v2) in ns, as the shim's default ack
// file in dir.
func WriteDemoAcks(t *testing.T, dir, ns string) {
	t.Helper()
	acks := "- kind: StatefulSet\n  namespace: " + ns + "\n  name: demo-db\n  reason: claim template grows to 2Gi; reviewed in the pull request\n"
	if err := os.WriteFile(filepath.Join(dir, ".safe-upgrade-acks.yaml"), []byte(acks), 0o644); err != nil {
		t.Fatal(err)
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
