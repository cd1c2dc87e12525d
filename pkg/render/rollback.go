package render

import (
	"context"
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
)

// Rollback returns, as a Result, what `helm rollback name version` applies:
// no render, but the stored revision version made the next one, exactly as
// Helm 3.22's prepareRollback builds it (pkg/action/rollback.go), so that
// the planner compares it with the live objects as it does a render, and
// the apply hands it to Helm's rollback action.
//
// As there, the current release is the last revision whatever its status
// (a failed upgrade's included): its Manifest is the "original" of the
// three-way patches and its objects missing from revision version are
// deleted; version 0 is the revision before it; the new revision is the
// last one plus one, with revision version's chart, values, manifest,
// hooks, notes and labels, and the description "Rollback to VERSION".
// RollbackTo is set to version; Chart and Values are the target's;
// ApplyMethod is the last revision's recorded apply method and
// RollbackApplyMethod the target's, which Helm 4's rollback follows under
// --server-side=auto (Result.ServerSideApply).
func Rollback(ctx context.Context, cfg *action.Configuration, name, ns string, version int) (*Result, error) {
	if cfg == nil || cfg.Releases == nil {
		return nil, errors.New("rollback: the Helm configuration has no release storage")
	}
	if err := chartutil.ValidateReleaseName(name); err != nil {
		return nil, fmt.Errorf("rollback %q: %w", name, err)
	}
	hist, err := releasestate.History(cfg.Releases, name)
	if err != nil {
		return nil, fmt.Errorf("release %q in namespace %s: reading its history: %w", name, ns, err)
	}
	if len(hist) == 0 {
		return nil, fmt.Errorf("release %q not found in namespace %s: no revision to roll back to: %w", name, ns, ErrReleaseNotFound)
	}
	current := hist[0]
	target, err := rollbackTarget(hist, version)
	if err != nil {
		return nil, fmt.Errorf("release %q in namespace %s: %w", name, ns, err)
	}
	// Helm 4 applies the rollback with the method recorded in the target
	// under "auto"; the last revision's says how the live objects are
	// managed now (a client-side release's fields are handed over first).
	method, okLast, err := recordedApplyMethod(ctx, cfg, ns, current)
	if err != nil {
		return nil, fmt.Errorf("release %q in namespace %s: reading the apply method of revision %d: %w", name, ns, current.Version, err)
	}
	targetMethod, okTarget, err := recordedApplyMethod(ctx, cfg, ns, target)
	if err != nil {
		return nil, fmt.Errorf("release %q in namespace %s: reading the apply method of revision %d: %w", name, ns, target.Version, err)
	}
	info := &release.Info{
		FirstDeployed: current.Info.FirstDeployed,
		Status:        release.StatusPendingRollback,
		Description:   fmt.Sprintf("Rollback to %d", target.Version),
	}
	if target.Info != nil {
		info.Notes = target.Info.Notes
	}
	next := &release.Release{
		Name:      name,
		Namespace: current.Namespace,
		Chart:     target.Chart,
		Config:    target.Config,
		Info:      info,
		Version:   current.Version + 1,
		Labels:    target.Labels,
		Manifest:  target.Manifest,
		Hooks:     target.Hooks,
	}
	res := &Result{Previous: current, Last: current, Next: next, ApplyMethod: method,
		Chart: target.Chart, Values: target.Config, RollbackTo: target.Version,
		RollbackApplyMethod: targetMethod, helm3Only: okLast && okTarget && method == "" && targetMethod == ""}
	if !okTarget {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the apply method Helm 4 records cannot be read from the %s release storage: under --server-side=auto the rollback is planned as client-side; pass --server-side=true if Helm 4 applied revision %d server-side", cfg.Releases.Name(), target.Version))
	}
	return res, nil
}

// rollbackTarget is the revision `helm rollback` goes back to in hist
// (newest first): version, or with 0 the one numbered one less than the
// last (not the last deployed one: after a failed upgrade, the revision it
// failed from). A revision that is not in the history (pruned by
// --history-max, or never made) is an error, as in Helm.
func rollbackTarget(hist []*release.Release, version int) (*release.Release, error) {
	if version < 0 {
		return nil, fmt.Errorf("revision %d: a revision is 1 or more (0 or none: the previous one)", version)
	}
	want := version
	if want == 0 {
		want = hist[0].Version - 1
	}
	for _, r := range hist {
		if r.Version == want {
			return r, nil
		}
	}
	if version == 0 {
		return nil, fmt.Errorf("revision %d has no previous revision to roll back to (the history holds revisions %s)", hist[0].Version, revisions(hist))
	}
	return nil, fmt.Errorf("no revision %d to roll back to (the history holds revisions %s)", want, revisions(hist))
}

// revisions lists the revision numbers of hist, oldest first.
func revisions(hist []*release.Release) string {
	s := ""
	for i := len(hist) - 1; i >= 0; i-- {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprint(hist[i].Version)
	}
	return s
}
