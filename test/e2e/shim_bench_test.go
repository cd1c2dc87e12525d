package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/toolbuild"
)

// HelmfileEnv names the helmfile binary BenchmarkShimHelmfileDiff runs
// (scripts/bench.sh sets it when helmfile is in the cache).
const HelmfileEnv = "SAFE_UPGRADE_HELMFILE"

// shimBench is the drop-in helm laid out for a benchmark: the dispatcher
// (cmd/helm-shim) and the tool beside it, as in the release archive's bin/,
// DIR/helm linking to the dispatcher as `shim install DIR` makes it, and the
// real helm (Helm 3) in a folder of its own.
type shimBench struct {
	shimDir, realDir string
	env              []string // the cluster's, PATH = shim, real helm, the system's
}

// newShimBench builds the tool and the dispatcher from this tree (BENCH_TOOL
// is not used: the dispatcher must be the one beside the tool).
func newShimBench(b *testing.B, c *testcluster.Cluster) shimBench {
	_, dispatcher, err := toolbuild.BuildShim(c.Root, b.TempDir(), "bench", "bench")
	must(b, err)
	s := shimBench{shimDir: filepath.Join(b.TempDir(), "shim"), realDir: filepath.Join(b.TempDir(), "real")}
	for dir, target := range map[string]string{s.shimDir: dispatcher, s.realDir: c.Helm3} {
		must(b, os.MkdirAll(dir, 0o755))
		must(b, os.Symlink(target, filepath.Join(dir, "helm")))
	}
	for _, kv := range c.Env() {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "SAFE_UPGRADE_") {
			s.env = append(s.env, kv)
		}
	}
	s.env = append(s.env, "PATH="+strings.Join([]string{s.shimDir, s.realDir, os.Getenv("PATH")}, string(os.PathListSeparator)))
	return s
}

// BenchmarkShimPassThrough measures what the drop-in helm
// (docs/orchestrators.md) adds to commands it hands to the real helm: each
// command as a whole process, the real helm directly and through the shim
// first on PATH, in turns; median wall and CPU time of BENCH_RUNS runs.
// scripts/bench.sh prints the difference.
func BenchmarkShimPassThrough(b *testing.B) {
	runs := benchRuns(b)
	c := testcluster.Get(b)
	s := newShimBench(b, c)
	ns := c.Namespace(b)
	c.Helm(b, "install", "demo", filepath.Join(c.Root, "testdata", "charts", "demo"), "-n", ns)
	for _, cmd := range []struct {
		name string
		args []string
	}{
		{"version", []string{"version", "--short"}},
		{"list", []string{"list", "-n", ns}},
	} {
		// The real helm and the shim in turns, run after run.
		b.Run(cmd.name, func(b *testing.B) {
			var contenders []contender
			for _, via := range []struct{ name, helm string }{{"helm", filepath.Join(s.realDir, "helm")}, {"shim", filepath.Join(s.shimDir, "helm")}} {
				contenders = append(contenders, contender{name: via.name, run: func() (sample, error) {
					return execMeasured(s.env, via.helm, cmd.args...)
				}})
			}
			benchInterleaved(b, runs, contenders)
		})
	}
}

// BenchmarkShimHelmfileDiff measures a 10-release `helmfile diff` with the
// shim first on PATH (it serves helm diff upgrade: no helm-diff plugin is
// installed) beside what a user has without it for the same check: 10
// sequential `helm upgrade --dry-run=server`, one per release, in one bash
// process. Whole processes, their children included, in turns; median of
// BENCH_RUNS.
// It skips without HelmfileEnv: helmfile is a long build, off the default
// path (make test-orchestrators builds it).
func BenchmarkShimHelmfileDiff(b *testing.B) {
	helmfile := os.Getenv(HelmfileEnv)
	if helmfile == "" {
		b.Skip("helmfile not given: set " + HelmfileEnv + " (scripts/bench.sh does when it is in the cache)")
	}
	const releases = 10
	runs := benchRuns(b)
	c := testcluster.Get(b)
	s := newShimBench(b, c)
	ns := c.Namespace(b)
	dir := b.TempDir()
	chart := filepath.Join(dir, "charts", "demo")
	must(b, os.CopyFS(chart, os.DirFS(filepath.Join(c.Root, "testdata", "charts", "demo"))))
	var doc, loop strings.Builder
	doc.WriteString("releases:\n")
	for i := range releases {
		name := fmt.Sprintf("demo%d", i)
		fmt.Fprintf(&doc, "  - name: %s\n    namespace: %s\n    chart: ./charts/demo\n    values:\n      - config:\n          greeting: changed\n", name, ns)
		c.Helm(b, "install", name, chart, "-n", ns)
		fmt.Fprintf(&loop, "helm upgrade %s ./charts/demo -n %s --set config.greeting=changed --dry-run=server >/dev/null || exit 1\n", name, ns)
	}
	must(b, os.WriteFile(filepath.Join(dir, "helmfile.yaml"), []byte(doc.String()), 0o644))
	env := append(append([]string(nil), s.env...), helmHomes(b.TempDir())...)
	realEnv := append(append([]string(nil), env...), "PATH="+s.realDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	benchInterleaved(b, runs, []contender{
		{name: "helmfile-diff/shim", run: func() (sample, error) {
			return execMeasuredIn(dir, env, helmfile, "diff", "--concurrency", "1")
		}},
		{name: "helm-upgrade-dry-run-server/helm", run: func() (sample, error) {
			return execMeasuredIn(dir, realEnv, "bash", "-c", loop.String())
		}},
	})
}

// helmHomes gives helm fresh homes under dir (no plugins: the shim serves
// helm diff).
func helmHomes(dir string) []string {
	var out []string
	for _, h := range []string{"CACHE", "CONFIG", "DATA"} {
		out = append(out, "HELM_"+h+"_HOME="+filepath.Join(dir, strings.ToLower(h)))
	}
	return append(out, "HELM_PLUGINS="+filepath.Join(dir, "plugins"))
}
