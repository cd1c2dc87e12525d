package verb

import (
	"context"
	"fmt"

	"helm.sh/helm/v3/pkg/action"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/savedplan"
)

// Rollback is `helm rollback RELEASE [REVISION]`, planned as an upgrade
// whose new render is the stored revision it goes back to: Plan compares
// the last revision's manifest, the target's and the live objects with the
// same planner, verdicts and data-loss analysis, under the operation
// rollback (pre/post-rollback hooks; what the target lacks is deleted
// unless kept); Apply runs Helm's own rollback action on exactly that
// revision (history: "Rollback to REVISION"), with the same lease, safe
// recreate, journal and rollout watch as an upgrade.
type Rollback struct {
	// Revision is the revision to go back to; 0: the one before the last,
	// as Helm.
	Revision int
}

// RollbackRequest is the plan request of a rollback of release: the flags
// a rollback shares with helm upgrade are in render (Timeout, Wait,
// WaitForJobs, DisableHooks, CleanupOnFail, MaxHistory, Namespace, and
// Helm 4's ServerSide and ForceConflicts); nothing is rendered.
func RollbackRequest(release string, to Rollback, opts render.Options, apply ApplyMode, forApply bool) PlanRequest {
	return PlanRequest{ReleaseName: release, Render: opts, Apply: apply, ForApply: forApply, Rollback: &to}
}

// rollbackSource reads the revision req.Rollback goes back to from helm's
// release storage (releasestate.ReadRollback), makes the next revision of
// it (render.Rollback), and refuses the flags Helm would refuse for it
// (Result.CheckRollbackFlags). A rollback Helm 4 applies server-side
// (--server-side=true, or under "auto" a target revision Helm 4 applied
// server-side) is planned server-side and applied through Helm 4's
// rollback action (pkg/apply).
func (c *Config) rollbackSource(ctx context.Context, req PlanRequest, helm *action.Configuration) (*render.Result, error) {
	c.progress("Reading the revisions of release %s", req.ReleaseName)
	rb, err := releasestate.ReadRollback(ctx, helm, req.ReleaseName, c.Namespace, req.Rollback.Revision)
	if err != nil {
		return nil, err
	}
	res := render.Rollback(render.Revision{Release: rb.Last, Method: rb.LastMethod.Method, Known: rb.LastMethod.OK},
		render.Revision{Release: rb.Target, Method: rb.TargetMethod.Method, Known: rb.TargetMethod.OK}, helm.Releases.Name())
	if err := res.CheckRollbackFlags(req.Render.ServerSide, req.Render.ForceConflicts); err != nil {
		return nil, err
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(c.Out, "warning:", w)
	}
	c.Logf("rolling back release %s from revision %d to revision %d, as revision %d", req.ReleaseName, res.Last.Version, res.RollbackTo, res.Next.Version)
	return res, nil
}

// op is the operation of req, as a saved plan pins it.
func (req PlanRequest) op() savedplan.Op {
	if req.Rollback != nil {
		return savedplan.OpRollback
	}
	return savedplan.OpUpgrade
}
