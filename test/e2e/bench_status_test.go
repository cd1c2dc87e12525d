package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/testcluster"
)

// Status bench shape: releases of objects each (the bench chart's four
// kinds), all in sync.
const (
	statusBenchReleases = 50
	statusBenchObjects  = 20
)

// BenchmarkStatus measures `status -A -o json` of a cluster holding
// statusBenchReleases releases of statusBenchObjects objects each (one
// namespace each), beside the floor of reading the same live objects:
// `kubectl get` of the chart's kinds in every namespace (-A -o json).
// Medians of BENCH_RUNS runs as BenchmarkUpgrade's; scripts/bench.sh
// prints the ratio (target: at most 1.5).
func BenchmarkStatus(b *testing.B) {
	runs := benchRuns(b)
	c := testcluster.Get(b)
	env := c.Env()
	chart := writeBenchChart(b)
	tool := benchTool(b, c)
	for i := range statusBenchReleases {
		ns := c.Namespace(b)
		_, err := execMeasured(env, c.Helm3, "install", fmt.Sprintf("bench-%d", i), chart, "-n", ns, "--timeout", "15m",
			"--set", fmt.Sprintf("objects=%d", statusBenchObjects))
		must(b, err)
	}
	name := fmt.Sprintf("%d-releases-of-%d-objects", statusBenchReleases, statusBenchObjects)
	// The contenders run in turn, run after run, so that a load on the
	// machine that comes and goes weighs on each alike.
	contenders := []struct {
		name string
		run  func() (sample, error)
	}{
		{"tool", func() (sample, error) {
			return execMeasured(env, tool, "status", "-A", "-o", "json", "--detailed-exitcode")
		}},
		{"floor", func() (sample, error) {
			return execMeasured(env, c.Kubectl, "get", "configmaps,secrets,services,deployments.apps", "-A", "-o", "json")
		}},
	}
	if base := os.Getenv(BenchBaselineEnv); base != "" {
		contenders = append(contenders, struct {
			name string
			run  func() (sample, error)
		}{"baseline", func() (sample, error) {
			return execMeasured(env, base, "status", "-A", "-o", "json", "--detailed-exitcode")
		}})
	}
	samples := make([][]sample, len(contenders))
	for range runs {
		for i, ct := range contenders {
			s, err := ct.run()
			must(b, err)
			samples[i] = append(samples[i], s)
		}
	}
	for i, ct := range contenders {
		b.Run(name+"/"+ct.name, func(b *testing.B) { report(b, samples[i]) })
	}
}

// BenchBaselineEnv names another tool binary (e.g. one built from main)
// BenchmarkStatus measures beside this tree's, in turn with it.
const BenchBaselineEnv = "BENCH_BASELINE"
