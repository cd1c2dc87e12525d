package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
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
	// The contenders run in turns, run after run (benchInterleaved).
	status := func(tool string) func() (sample, error) {
		return func() (sample, error) {
			return execMeasured(env, tool, "status", "-A", "-o", "json", "--detailed-exitcode")
		}
	}
	contenders := []contender{
		{name: "tool", run: status(tool)},
		{name: "floor", run: func() (sample, error) {
			return execMeasured(env, c.Kubectl, "get", "configmaps,secrets,services,deployments.apps", "-A", "-o", "json")
		}},
	}
	if base := os.Getenv(BenchBaselineEnv); base != "" {
		contenders = append(contenders, contender{name: "baseline", run: status(base)})
	}
	b.Run(name, func(b *testing.B) { benchInterleaved(b, runs, contenders) })
}

// BenchBaselineEnv names another tool binary (e.g. one built from main)
// BenchmarkStatus and BenchmarkAdmission measure beside this tree's, in
// turn with it.
const BenchBaselineEnv = "BENCH_BASELINE"
