package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/testcluster"
)

// BenchmarkShimPassThrough measures what the drop-in helm (the tool invoked
// as helm, docs/orchestrators.md) adds to commands it hands to the real
// helm: each command as a whole process, directly and through the shim
// first on PATH, median wall time of BENCH_RUNS runs. scripts/bench.sh
// prints the difference.
func BenchmarkShimPassThrough(b *testing.B) {
	runs := benchRuns(b)
	c := testcluster.Get(b)
	tool := benchTool(b, c)
	shimDir, realDir := filepath.Join(b.TempDir(), "shim"), filepath.Join(b.TempDir(), "real")
	for dir, target := range map[string]string{shimDir: tool, realDir: c.Helm3} {
		must(b, os.MkdirAll(dir, 0o755))
		must(b, os.Symlink(target, filepath.Join(dir, "helm")))
	}
	ns := c.Namespace(b)
	c.Helm(b, "install", "demo", filepath.Join(c.Root, "testdata", "charts", "demo"), "-n", ns)
	var env []string
	for _, kv := range c.Env() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	env = append(env, "PATH="+shimDir+string(os.PathListSeparator)+realDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, cmd := range []struct {
		name string
		args []string
	}{
		{"version", []string{"version", "--short"}},
		{"list", []string{"list", "-n", ns}},
	} {
		for _, via := range []struct{ name, helm string }{{"helm", filepath.Join(realDir, "helm")}, {"shim", filepath.Join(shimDir, "helm")}} {
			b.Run(cmd.name+"/"+via.name, func(b *testing.B) {
				measure(b, runs, func() (sample, error) { return execMeasured(env, via.helm, cmd.args...) })
			})
		}
	}
}
