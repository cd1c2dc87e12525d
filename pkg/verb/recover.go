package verb

import (
	"context"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apply"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// Recover resolves what an interrupted apply of release left (see
// apply.Recover): the objects it deleted for recreation come back from its
// journal once every entry passed the checks and confirm (nil: --yes)
// said yes, its pending revision is marked failed, the journal is
// removed. It holds the release's Lease meanwhile, taken and released as
// every writing verb does (takeLease: refused while another run holds it;
// a stale one is taken over).
func (c *Config) Recover(ctx context.Context, release string, opts render.Options, confirm func(plan string) (bool, error)) error {
	if err := c.Connect(ctx); err != nil {
		return err
	}
	user, lease, err := c.takeLease(ctx, release, nil)
	if err != nil {
		return err
	}
	defer c.releaseLease(lease, false)
	before := c.newestDescription(release)
	err = apply.Recover(ctx, apply.RecoverRequest{Config: c.Helm, Cluster: c.Cluster, Name: release, Namespace: c.Namespace,
		Timeout: opts.TimeLimit(), Confirm: confirm}, c.Out)
	// What it restored goes in the settled revision's record (a restore
	// that failed half-way too: its description says so).
	c.recordRecovery(ctx, release, user, before)
	return err
}
