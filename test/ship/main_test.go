// Package ship tests the tool the way users get it: the Helm plugin installed
// by real Helm 3 and Helm 4 CLIs, the kubectl plugin installed by real krew
// from a goreleaser snapshot and a generated manifest, the release archives
// themselves, and the GitHub Action — all against the local control plane of
// test/kit/testcluster. The release tools (goreleaser, krew) are built from
// the Go module proxy by scripts/build-shiptools.sh and cached.
package ship

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/proc"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/toolbuild"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

// result is one finished command.
type result = proc.Result

// cmd describes a command to run; the zero value runs in the repository root
// with this process's environment. A command has no time limit of its own
// (testcluster.CommandContext): what a slower machine takes longer for, such
// as a cold build inside goreleaser or a plugin install, must not fail a test.
type cmd struct {
	Dir string
	Env []string
}

// run runs name with args and returns how it ended. It fails the test when
// the command cannot start or is still running as the test binary's deadline
// nears; a non-zero exit is a result, not a failure.
func (c cmd) run(t *testing.T, name string, args ...string) result {
	t.Helper()
	ctx, cancel := testcluster.CommandContext(t)
	defer cancel()
	x := exec.CommandContext(ctx, name, args...)
	x.Dir = c.Dir
	if x.Dir == "" {
		x.Dir = repoRoot(t)
	}
	x.Env = c.Env
	r, err := proc.Run(x)
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s %s: still running as the test binary's deadline (go test -timeout) nears\n%s", name, strings.Join(args, " "), r)
	case err != nil:
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return r
}

// mustRun is run for commands that must succeed; it returns their stdout.
func (c cmd) mustRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	r := c.run(t, name, args...)
	if r.Code != 0 {
		t.Fatalf("%s %s failed:\n%s", name, strings.Join(args, " "), r)
	}
	return r.Stdout
}

// repoRoot returns the repository root (two levels above this package).
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at the repository root %s: %v", root, err)
	}
	return root
}

// shipTool returns the path of a release tool ("goreleaser" or "krew"),
// building it from the Go module proxy on first use (cached under .cache/bin;
// a cold goreleaser build takes minutes).
func shipTool(t *testing.T, name string) string {
	t.Helper()
	out := cmd{}.mustRun(t, "bash", filepath.Join(repoRoot(t), "scripts", "build-shiptools.sh"), name)
	path := strings.TrimSpace(out)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("scripts/build-shiptools.sh %s printed %q: %v", name, out, err)
	}
	return path
}

// toolBuild is the binary that toolBinary builds once per test binary.
var toolBuild struct {
	once sync.Once
	path string
	err  error
}

// testVersion and testCommit are what toolBinary stamps in with -ldflags, as
// the release build does.
const (
	testVersion = "9.9.9-ship"
	testCommit  = "feedbee"
)

// toolBinary builds cmd/helm-safe-upgrade once per test binary, with the
// release build's -ldflags, into .cache/ship-test/ (a fixed folder, so runs do
// not pile up binaries; it is replaced atomically) and returns its path. It
// is built with make build's flags (no -trimpath, which is part of every
// package's build-cache key), so it only links what go test and make build
// compiled already.
func toolBinary(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	toolBuild.once.Do(func() {
		toolBuild.path, toolBuild.err = toolbuild.Build(root, filepath.Join(root, ".cache", "ship-test"), testVersion, testCommit)
	})
	if toolBuild.err != nil {
		t.Fatal(toolBuild.err)
	}
	return toolBuild.path
}

// helmHome returns c.Env() with fresh, empty helm homes: an empty plugin
// folder and private config, cache and data (Helm 4 installs plugins under
// HELM_DATA_HOME but loads them from HELM_PLUGINS, so both point here).
func helmHome(t *testing.T, c *testcluster.Cluster) []string {
	t.Helper()
	home := t.TempDir()
	return append(c.Env(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"HELM_PLUGINS="+filepath.Join(home, "data", "plugins"),
	)
}

// withEnv returns env with the given KEY=VALUE entries added; a later entry
// wins over an earlier one for the same key (os/exec keeps the last).
func withEnv(env []string, kv ...string) []string {
	return append(append([]string(nil), env...), kv...)
}

// withoutEnv returns env without the entries for the given keys.
func withoutEnv(env []string, keys ...string) []string {
	var out []string
next:
	for _, kv := range env {
		for _, k := range keys {
			if strings.HasPrefix(kv, k+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// chart returns the path of a chart under testdata/charts.
func chart(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join(repoRoot(t), "testdata", "charts", name)
}

// hasLinePrefix reports whether some line of text starts with prefix.
func hasLinePrefix(text, prefix string) bool {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			return true
		}
	}
	return false
}
