package upgrade

import (
	"context"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apply"
)

// Recover resolves what an interrupted apply of release left (see
// apply.Recover): the objects it deleted for recreation come back from its
// journal, its pending revision is marked failed, the journal is removed.
func (c *Config) Recover(ctx context.Context, release string, opts RenderOptions) error {
	if err := c.Connect(ctx); err != nil {
		return err
	}
	return apply.Recover(ctx, c.Helm, c.Cluster, release, c.Namespace, opts.TimeLimit(), c.Out)
}
