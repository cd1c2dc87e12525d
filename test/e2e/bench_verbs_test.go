package e2e

import (
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// contender is one whole-process command a benchmark times: its name (the
// sub-benchmark's), what it runs (several processes in a row for a floor)
// and, optionally, what its sub-benchmark reports besides, unmeasured
// (after every contender's runs, so that it weighs on none of them).
type contender struct {
	name  string
	run   func() (sample, error)
	after func(b *testing.B)
}

// interleaved runs each contender once per round, in turn, for runs
// rounds, and returns each one's samples in contenders' order: a load that
// comes and goes on a shared machine falls on all of them alike, which it
// would not were each timed all at once.
func interleaved(runs int, contenders []contender) ([][]sample, error) {
	out := make([][]sample, len(contenders))
	for range runs {
		for i, c := range contenders {
			s, err := c.run()
			if err != nil {
				return nil, err
			}
			out[i] = append(out[i], s)
		}
	}
	return out, nil
}

// benchInterleaved reports, as one sub-benchmark each, the medians of
// contenders timed in turns (interleaved).
func benchInterleaved(b *testing.B, runs int, contenders []contender) {
	b.Helper()
	samples := sync.OnceValues(func() ([][]sample, error) { return interleaved(runs, contenders) })
	for i, c := range contenders {
		b.Run(c.name, func(b *testing.B) {
			all, err := samples()
			must(b, err)
			report(b, all[i])
			if c.after != nil {
				c.after(b)
			}
		})
	}
}

// benchSetup is what a benchmark of one release starts from: the runs per
// contender, the cluster and its environment, the bench chart, the tool to
// measure and a namespace of its own.
func benchSetup(b *testing.B) (runs int, c *testcluster.Cluster, env []string, chart, tool, ns string) {
	b.Helper()
	c = testcluster.Get(b)
	return benchRuns(b), c, c.Env(), writeBenchChart(b), benchTool(b, c), c.Namespace(b)
}

// Log bench shape: a release of logBenchObjects objects (the bench chart's
// four kinds) with logBenchRevisions revisions, each with other values than
// the one before.
const (
	logBenchRevisions = 100
	logBenchObjects   = 20
)

// BenchmarkVerbs measures the plans of the verbs other than upgrade beside
// their floors, whole processes timed in turns: the rollback plan (--dry-run
// -o json) of a 1000-object release whose last upgrade changed 150 of them,
// back to its first revision, beside what any rollback plan has to read
// (`helm get manifest` of both revisions and one LIST of the objects'
// kinds); the uninstall plan of the same release beside `helm get
// manifest` and the LIST; and `log -o json` of a release with
// logBenchRevisions revisions made by plain helm (every entry computed from
// the stored manifests) beside its floor, `helm history -o json`, which
// reads and decodes every stored revision whole (manifests included): all
// a log has to read, in one LIST. A third contender, by-hand, is what a
// user runs to see what each revision changed without the tool: `helm
// history` and `helm get manifest` of every revision (the diffs left to
// the reader). scripts/bench.sh prints them as a table with the ratios.
// status -A has its own benchmark (BenchmarkStatus).
func BenchmarkVerbs(b *testing.B) {
	runs, c, env, chart, tool, ns := benchSetup(b)
	// The 1000-object release, installed and upgraded when a row first
	// needs it (-bench Verbs/log does not).
	installed := sync.OnceValue(func() error {
		for _, set := range []string{"objects=1000", "objects=1000,changed=150"} {
			verb := "install"
			if set != "objects=1000" {
				verb = "upgrade"
			}
			if _, err := execMeasured(env, c.Helm3, verb, "bench", chart, "-n", ns, "--timeout", "15m", "--set", set); err != nil {
				return err
			}
		}
		return nil
	})
	list := func() (sample, error) {
		return execMeasured(env, c.Kubectl, "get", "configmaps,secrets,services,deployments.apps", "-n", ns, "-o", "json")
	}
	manifest := func(ns string, revision int) (sample, error) {
		return execMeasured(env, c.Helm3, "get", "manifest", "bench", "-n", ns, "--revision", strconv.Itoa(revision))
	}
	b.Run("rollback/1000-objects-150-changed", func(b *testing.B) {
		must(b, installed())
		benchInterleaved(b, runs, []contender{
			{name: "tool", run: func() (sample, error) {
				return execMeasured(env, tool, "rollback", "bench", "1", "-n", ns, "--dry-run", "-o", "json")
			}},
			{name: "floor", run: func() (sample, error) {
				last, err := manifest(ns, 2)
				if err != nil {
					return sample{}, err
				}
				target, err := manifest(ns, 1)
				if err != nil {
					return sample{}, err
				}
				l, err := list()
				return last.then(target).then(l), err
			}},
		})
	})
	b.Run("uninstall/1000-objects", func(b *testing.B) {
		must(b, installed())
		benchInterleaved(b, runs, []contender{
			{name: "tool", run: func() (sample, error) {
				return execMeasured(env, tool, "uninstall", "bench", "-n", ns, "--dry-run", "-o", "json")
			}},
			{name: "floor", run: func() (sample, error) {
				s, err := manifest(ns, 2)
				if err != nil {
					return sample{}, err
				}
				l, err := list()
				return s.then(l), err
			}},
		})
	})
	b.Run(fmt.Sprintf("log/%d-revisions", logBenchRevisions), func(b *testing.B) {
		ns := c.Namespace(b)
		installHistory(b, env, c.Helm3, chart, ns, logBenchRevisions)
		history := func() (sample, error) {
			return execMeasured(env, c.Helm3, "history", "bench", "-n", ns, "--max", strconv.Itoa(logBenchRevisions), "-o", "json")
		}
		benchInterleaved(b, runs, []contender{
			{name: "tool", run: func() (sample, error) {
				return execMeasured(env, tool, "log", "bench", "-n", ns, "-o", "json")
			}},
			{name: "floor", run: history},
			{name: "by-hand", run: func() (sample, error) {
				s, err := history()
				for rev := 1; rev <= logBenchRevisions && err == nil; rev++ {
					var m sample
					m, err = manifest(ns, rev)
					s = s.then(m)
				}
				return s, err
			}},
		})
	})
}

// installHistory gives the release bench in ns revisions revisions with
// helm: an install and upgrades, small (logBenchObjects objects), each
// changing the content of another number of objects than the one before
// and, every tenth, the label on all of them, so that no two revisions in
// a row are alike. No revision is pruned (--history-max 0).
func installHistory(b *testing.B, env []string, helm, chart, ns string, revisions int) {
	b.Helper()
	for rev := range revisions {
		args := []string{"upgrade", "bench", chart, "-n", ns, "--history-max", "0"}
		if rev == 0 {
			args = []string{"install", "bench", chart, "-n", ns}
		}
		set := fmt.Sprintf("objects=%d,changed=%d,label=%d", logBenchObjects, rev%logBenchObjects, rev/10)
		_, err := execMeasured(env, helm, append(args, "--set", set)...)
		must(b, err)
	}
}
