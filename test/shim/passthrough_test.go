package shim

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/shim"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/shim/helmdiff"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/shimtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestPassThroughByteForByte runs every command the shim does not serve
// (rollback and uninstall are served: TestRollbackUninstallThroughShim)
// with and without the shim first on PATH, Helm 3 and Helm 4 as the real
// helm, and compares stdout, stderr and the exit code byte for byte.
// Commands that change a release run in a namespace of each side's own,
// holding the same release; the others read one shared release. Each side
// has helm homes of its own (repo add adds once to each) at the same path
// (helm env and --help print them): a link switched before each run.
func TestPassThroughByteForByte(t *testing.T) {
	c := testcluster.Get(t)
	repo := chartRepo(t, c)
	for _, helm := range []struct {
		name, path string
		install    func(t testing.TB, args ...string) string
	}{
		{"helm3", c.Helm3, c.Helm},
		{"helm4", c.Helm4, c.HelmV4},
	} {
		t.Run(helm.name, func(t *testing.T) {
			dirs := tool.Dirs(t, c, helm.path)
			shared := c.Namespace(t)
			helm.install(t, "install", "demo", shimtest.Chart(c, "demo"), "-n", shared, "--set", "web.replicas=2")
			type side struct {
				name, helm, ns, home string
				env                  []string
			}
			home := filepath.Join(t.TempDir(), "home")
			// SAFE_UPGRADE_DIFF=0: the shim adds no diff row to plugin list
			// (TestPluginListShowsDiff covers the row).
			sides := []*side{
				{name: "real helm", helm: filepath.Join(dirs.Real, "helm"), env: shimtest.Env(t, c, []string{dirs.Real}, append(shimtest.HelmHome(home), helmdiff.Env+"=0")...)},
				{name: "shim", helm: filepath.Join(dirs.Shim, "helm"), env: shimtest.Env(t, c, []string{dirs.Shim, dirs.Real}, append(shimtest.HelmHome(home), helmdiff.Env+"=0")...)},
			}
			for _, s := range sides {
				s.ns = c.Namespace(t)
				s.home = t.TempDir()
				helm.install(t, "install", "demo", shimtest.Chart(c, "demo"), "-n", s.ns)
				helm.install(t, "upgrade", "demo", shimtest.Chart(c, "demo"), "-n", s.ns, "--set", "web.replicas=3")
			}
			work := t.TempDir()
			for _, tt := range []struct {
				args []string
				code int
			}{
				{[]string{"version", "--short"}, 0},
				{[]string{"version"}, 0},
				{[]string{"env"}, 0},
				{[]string{"list", "-o", "json", "-n", shared}, 0},
				{[]string{"-n", shared, "list"}, 0},
				{[]string{"template", "demo", shimtest.Chart(c, "demo"), "-n", shared}, 0},
				{[]string{"get", "values", "demo", "-n", shared}, 0},
				{[]string{"get", "values", "demo", "-n", shared, "-o", "json"}, 0},
				{[]string{"history", "demo", "-n", shared}, 0},
				{[]string{"repo", "add", "local", repo}, 0},
				{[]string{"repo", "update"}, 0},
				{[]string{"search", "repo", "local/"}, 0},
				{[]string{"plugin", "list"}, 0},
				{[]string{"upgrade", "--help"}, 0},
				{[]string{"get", "values", "demo", "--revision", "2", "-n", "{ns}"}, 0},
				{[]string{"frobnicate", "--now"}, 1},
				{[]string{"get", "values", "no-such-release", "-n", shared}, 1},
			} {
				var got []result
				for _, s := range sides {
					args := make([]string, len(tt.args))
					for i, a := range tt.args {
						args[i] = strings.ReplaceAll(a, "{ns}", s.ns)
					}
					if err := os.Remove(home); err != nil && !os.IsNotExist(err) {
						t.Fatal(err)
					}
					if err := os.Symlink(s.home, home); err != nil {
						t.Fatal(err)
					}
					got = append(got, shimtest.Run(t, work, s.env, s.helm, "helm", args...))
				}
				real, shimmed := got[0], got[1]
				if real.Code != tt.code {
					t.Errorf("helm %s (%s) exited %d, want %d: the test's setup is wrong\n%s", strings.Join(tt.args, " "), helm.name, real.Code, tt.code, real)
				}
				if shimmed != real {
					t.Errorf("helm %s: through the shim differs from %s\n=== %s\n%s\n=== shim\n%s", strings.Join(tt.args, " "), helm.name, helm.name, real, shimmed)
				}
			}
		})
	}
}

// TestPluginListShowsDiff: when no helm-diff plugin is installed the shim
// serves helm diff upgrade, and helm plugin list shows it (Helmsman looks
// for "diff" there before it starts) after Helm's own rows.
func TestPluginListShowsDiff(t *testing.T) {
	c := testcluster.Get(t)
	dirs := tool.Dirs(t, c, c.Helm3)
	e := shimtest.Env(t, c, []string{dirs.Shim, dirs.Real})
	real := shimtest.Run(t, t.TempDir(), e, filepath.Join(dirs.Real, "helm"), "helm", "plugin", "list")
	shimmed := shimtest.Run(t, t.TempDir(), e, filepath.Join(dirs.Shim, "helm"), "helm", "plugin", "list")
	if real.Code != 0 || shimmed.Code != 0 || shimmed.Stdout != real.Stdout+helmdiff.PluginListLine(shimtest.Version) || shimmed.Stderr != real.Stderr {
		t.Fatalf("plugin list\n=== real\n%s\n=== shim\n%s", real, shimmed)
	}
}

// TestShimAloneOnPath: with no real helm anywhere the shim says how to
// name one, and exits 1.
func TestShimAloneOnPath(t *testing.T) {
	c := testcluster.Get(t)
	dirs := tool.Dirs(t, c, c.Helm3)
	r := shimtest.Run(t, t.TempDir(), shimtest.Env(t, c, []string{dirs.Shim}), filepath.Join(dirs.Shim, "helm"), "helm", "version")
	if r.Code != 1 || !strings.Contains(r.Stderr, "no real helm found; set SAFE_UPGRADE_HELM") || r.Stdout != "" {
		t.Fatalf("shim alone on PATH:\n%s", r)
	}
	// SAFE_UPGRADE_HELM names the real helm outside PATH.
	r = shimtest.Run(t, t.TempDir(), shimtest.Env(t, c, []string{dirs.Shim}, shim.HelmEnv+"="+c.Helm3), filepath.Join(dirs.Shim, "helm"), "helm", "version", "--short")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "v3.") {
		t.Fatalf("SAFE_UPGRADE_HELM=%s helm version --short:\n%s", c.Helm3, r)
	}
}

// TestShimLoopGuard: a "real helm" that is the shim again (a copy of the
// dispatcher, which the lookup cannot tell from Helm) stops with the same
// advice instead of replacing itself forever.
func TestShimLoopGuard(t *testing.T) {
	c := testcluster.Get(t)
	dirs := tool.Dirs(t, c, c.Helm3)
	copyDir := t.TempDir()
	dispatcher, err := filepath.EvalSymlinks(filepath.Join(dirs.Shim, "helm"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(dispatcher)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(copyDir, "helm"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	r := shimtest.Run(t, t.TempDir(), shimtest.Env(t, c, []string{dirs.Shim, copyDir, dirs.Real}), filepath.Join(dirs.Shim, "helm"), "helm", "version")
	if r.Code != 1 || !strings.Contains(r.Stderr, "is the shim again") || !strings.Contains(r.Stderr, "no real helm found; set SAFE_UPGRADE_HELM") || r.Stdout != "" {
		t.Fatalf("shim whose next helm is a copy of it:\n%s", r)
	}
}

// chartRepo serves a chart repository over HTTP (the demo chart, packaged
// and indexed by helm) for the test and returns its URL.
func chartRepo(t *testing.T, c *testcluster.Cluster) string {
	t.Helper()
	dir := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	c.Helm(t, "package", shimtest.Chart(c, "demo"), "-d", dir)
	c.Helm(t, "repo", "index", dir, "--url", srv.URL)
	if _, err := os.Stat(filepath.Join(dir, "index.yaml")); err != nil {
		t.Fatal(err)
	}
	return srv.URL
}
