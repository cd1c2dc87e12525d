package e2e

import (
	"strconv"
	"sync"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/testcluster"
)

// contender is one whole-process command a benchmark times: its name (the
// sub-benchmark's) and what it runs (several processes in a row for a
// floor).
type contender struct {
	name string
	run  func() (sample, error)
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

// BenchmarkVerbs measures the plans of the verbs other than upgrade beside
// their floors, whole processes timed in turns: the rollback plan (--dry-run
// -o json) of a 1000-object release whose last upgrade changed 150 of them,
// back to its first revision, beside what any rollback plan has to read
// (`helm get manifest` of both revisions and one LIST of the objects'
// kinds); and the uninstall plan of the same release beside `helm get
// manifest` and the LIST. scripts/bench.sh prints them as a table with the
// ratios.
//
// Still to come here, each beside its floor, once its verb is on main: the
// plan of `status -A` (floor: `kubectl get -A -o json` of the same kinds)
// and `log` of a 100-revision release (branches status and log).
func BenchmarkVerbs(b *testing.B) {
	runs, c, env, chart, tool, ns := benchSetup(b)
	for _, set := range []string{"objects=1000", "objects=1000,changed=150"} {
		verb := "install"
		if set != "objects=1000" {
			verb = "upgrade"
		}
		_, err := execMeasured(env, c.Helm3, verb, "bench", chart, "-n", ns, "--timeout", "15m", "--set", set)
		must(b, err)
	}
	list := func() (sample, error) {
		return execMeasured(env, c.Kubectl, "get", "configmaps,secrets,services,deployments.apps", "-n", ns, "-o", "json")
	}
	manifest := func(revision int) (sample, error) {
		return execMeasured(env, c.Helm3, "get", "manifest", "bench", "-n", ns, "--revision", strconv.Itoa(revision))
	}
	b.Run("rollback/1000-objects-150-changed", func(b *testing.B) {
		benchInterleaved(b, runs, []contender{
			{"tool", func() (sample, error) {
				return execMeasured(env, tool, "rollback", "bench", "1", "-n", ns, "--dry-run", "-o", "json")
			}},
			{"floor", func() (sample, error) {
				last, err := manifest(2)
				if err != nil {
					return sample{}, err
				}
				target, err := manifest(1)
				if err != nil {
					return sample{}, err
				}
				l, err := list()
				return last.then(target).then(l), err
			}},
		})
	})
	b.Run("uninstall/1000-objects", func(b *testing.B) {
		benchInterleaved(b, runs, []contender{
			{"tool", func() (sample, error) {
				return execMeasured(env, tool, "uninstall", "bench", "-n", ns, "--dry-run", "-o", "json")
			}},
			{"floor", func() (sample, error) {
				s, err := manifest(2)
				if err != nil {
					return sample{}, err
				}
				l, err := list()
				return s.then(l), err
			}},
		})
	})
	// status -A and log: see the doc comment.
}
