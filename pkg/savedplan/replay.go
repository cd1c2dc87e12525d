package savedplan

import (
	"fmt"
	"io"
	"time"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// Run is the run a saved plan is applied in: what Start checks it against.
type Run struct {
	// Out is where the plan's origin is said.
	Out io.Writer
	// Masker is the run's: it takes the reviewed plan's key, so masked
	// values compare with the reviewed plan's.
	Masker *redact.Masker
	// Identity names the cluster; called only with a saved plan (reading
	// it costs requests).
	Identity func() (ClusterIdentity, error)
	// Render and Force are the run's apply flags (--force-replace).
	Render render.Options
	Force  bool
	// Op is the run's operation (for a rollback, the revision it goes back
	// to is checked once read, by UseIn): a saved plan applies only to the
	// operation it was made for.
	Op Op
	// Uninstall, for an uninstall, are its flags (UninstallFlags) in place
	// of Render's and Force.
	Uninstall map[string]interface{}
	// RestartStale is the run's --restart-stale.
	RestartStale bool
	// Now is the time; MaxAge is --plan-max-age (0: no limit).
	Now    time.Time
	MaxAge time.Duration
}

// Replay is a saved plan being applied by the Plan action: Start checked it
// against the run, and the action hands it the render (UseIn) and the plan
// (Unmoved) at the points they exist. A nil *Replay, there being no saved
// plan, passes both: the action runs the same steps either way.
type Replay struct {
	saved  *Plan
	render render.Options
}

// Start says where saved comes from on run.Out, masks with its key and
// refuses it on another cluster, with other apply flags, or when older than
// run.MaxAge, before anything is rendered. A nil saved (no --plan) starts
// nothing: a nil *Replay.
func Start(saved *Plan, run Run) (*Replay, error) {
	if saved == nil {
		return nil, nil
	}
	fmt.Fprintln(run.Out, saved.Origin())
	run.Masker.Key = saved.MaskKey
	if op := saved.op(); op != run.Op {
		what := op.words()
		if op == OpRollback {
			what = operation(saved.RollbackTo)
		}
		return nil, fmt.Errorf("saved plan is %s, not %s; apply it with the command that made it", what, run.Op.words())
	}
	id, err := run.Identity()
	if err != nil {
		return nil, err
	}
	flags := withRestart(ApplyFlags(run.Render, run.Force), run.RestartStale)
	if run.Op == OpUninstall {
		flags = run.Uninstall
	}
	if err := saved.check(id, flags, run.Now, run.MaxAge); err != nil {
		return nil, err
	}
	return &Replay{saved: saved, render: run.Render}, nil
}

// UseIn checks that the release, chart and values rendered are those of the
// saved plan and puts the saved render in place of res's (see Plan.useIn).
func (r *Replay) UseIn(res *render.Result) error {
	if r == nil {
		return nil
	}
	return r.saved.useIn(res, r.render)
}

// Unmoved refuses the saved plan when an object it changes moved in the
// cluster since (see Plan.unmoved).
func (r *Replay) Unmoved(p *plan.Plan) error {
	if r == nil {
		return nil
	}
	return r.saved.unmoved(p)
}
