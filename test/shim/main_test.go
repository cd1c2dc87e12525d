// Package shim tests the drop-in helm (the binary invoked as helm) as
// orchestrators and scripts run it: a separate process first on PATH, the
// real helm v3 or v4 after it, against the local control plane of
// internal/testcluster. Scripts in testdata make exactly the helm calls
// Helmsman and helmfile make (GUIDE §6b); real helmfile runs in `make
// test-orchestrators`.
package shim

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/proc"
	"github.com/safe-upgrade/helm-safe-upgrade/internal/testcluster"
	"github.com/safe-upgrade/helm-safe-upgrade/internal/toolbuild"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// result is one finished command.
type result = proc.Result

// run runs the executable at path, as argv0, with args in dir with env; a
// non-zero exit is a result, a command that cannot start fails the test. No
// time limit: the test binary's -timeout bounds it.
func run(t *testing.T, dir string, env []string, path, argv0 string, args ...string) result {
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

// toolBuild is the binary built once per test binary.
var toolBuild struct {
	once sync.Once
	path string
	err  error
}

// shimDirs is a PATH layout: Shim holds helm, a link to the tool's binary;
// Real holds helm, a link to the real helm (v3 or v4).
type shimDirs struct {
	Shim, Real string
}

// newShimDirs builds the tool (once) and lays out the shim and the real
// helm realHelm in folders of their own.
func newShimDirs(t *testing.T, c *testcluster.Cluster, realHelm string) shimDirs {
	t.Helper()
	toolBuild.once.Do(func() {
		toolBuild.path, toolBuild.err = toolbuild.Build(c.Root, filepath.Join(c.Root, ".cache", "shim-test"), "9.9.9-shim", "5h1m")
	})
	if toolBuild.err != nil {
		t.Fatal(toolBuild.err)
	}
	d := shimDirs{Shim: filepath.Join(t.TempDir(), "shim"), Real: filepath.Join(t.TempDir(), "real")}
	for dir, target := range map[string]string{d.Shim: toolBuild.path, d.Real: realHelm} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, "helm")); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// env returns the cluster's environment (without SAFE_UPGRADE_*) with PATH
// set to dirs followed by the system's folders (bash, grep), fresh helm
// homes, and kv added.
func env(t *testing.T, c *testcluster.Cluster, dirs []string, kv ...string) []string {
	t.Helper()
	home := t.TempDir()
	var out []string
	for _, e := range c.Env() {
		if !strings.HasPrefix(e, "PATH=") && !strings.HasPrefix(e, "SAFE_UPGRADE_") {
			out = append(out, e)
		}
	}
	out = append(out, "PATH="+strings.Join(append(dirs, "/usr/bin", "/bin"), string(os.PathListSeparator)))
	out = append(out, helmHome(home)...)
	return append(out, kv...)
}

// helmHome is the environment that gives helm its homes (config, cache,
// data, plugins) under dir.
func helmHome(dir string) []string {
	return []string{
		"HELM_CACHE_HOME=" + filepath.Join(dir, "cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(dir, "config"),
		"HELM_DATA_HOME=" + filepath.Join(dir, "data"),
		"HELM_PLUGINS=" + filepath.Join(dir, "data", "plugins"),
	}
}

// chart returns the path of a chart under testdata/charts.
func chart(c *testcluster.Cluster, name string) string {
	return filepath.Join(c.Root, "testdata", "charts", name)
}
