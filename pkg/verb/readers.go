package verb

import (
	"context"
	"errors"
	"fmt"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/restart"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/watch"
)

// checkReaders adds to out, the rollout's outcome, what became of the
// pods the plan leaves running while a ConfigMap or Secret they read
// changes (watch.Readers): as predicted when they all predate the apply,
// and for a reader through env, envFrom or subPath, still on the old value.
func (c *Config) checkReaders(ctx context.Context, planned *Planned, out *plan.Outcome) {
	for _, oo := range watch.Readers(ctx, c.Cluster.Reader(), planned.Plan, planned.applied) {
		if oo.Predicted != "" {
			if oo.AsPredicted {
				out.AsPredicted++
			} else {
				out.Differ++
			}
		}
		out.Objects = append(out.Objects, oo)
	}
}

// restartStale restarts, once Helm's upgrade succeeded, the workloads
// planned restarted by --restart-stale (plan.Plan.Restarts: exactly those
// the reviewed plan showed, pinned by a saved plan), and says so on Out.
// Not before: Helm's three-way patch compares the release's manifests and
// the live object, and a failed upgrade restarts nothing. A restart that
// fails is an error naming what was restarted and what was not; revision
// is the one Helm deployed.
func (c *Config) restartStale(ctx context.Context, planned *Planned, revision int) error {
	restarts := planned.Plan.Restarts()
	if len(restarts) == 0 {
		return nil
	}
	c.progress("Restarting %d workload(s) whose pods read a changed ConfigMap or Secret (--restart-stale)", len(restarts))
	res := restart.Apply(ctx, c.Cluster, restarts, c.Now())
	for _, name := range res.Restarted {
		fmt.Fprintf(c.Out, "Restarted %s (--restart-stale)\n", c.Sanitizer.Text(name, redact.MessageLimit))
	}
	if failed := res.Failure(planned.Plan.Release.Name, revision); failed != "" {
		return errors.New(c.Sanitizer.Text(failed, redact.MessageLimit))
	}
	return nil
}
