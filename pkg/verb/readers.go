package verb

import (
	"context"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
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
