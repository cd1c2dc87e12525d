package releasestate

import (
	"context"
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
)

// Rollback is what `helm rollback name version` starts from, as Helm
// 3.22's prepareRollback reads it (pkg/action/rollback.go): the last
// revision whatever its status (a failed upgrade's included), the revision
// rolled back to, and the apply method Helm 4 recorded with each.
type Rollback struct {
	Last, Target             *release.Release
	LastMethod, TargetMethod Recorded
}

// ReadRollback reads, from cfg's storage, the revisions a rollback of
// release name in ns to version goes from and to (version 0: the revision
// before the last; see rollbackTarget) and the apply method Helm 4
// recorded with each: Helm 4 applies the rollback with the target's under
// "auto"; the last revision's says how the live objects are managed now.
func ReadRollback(ctx context.Context, cfg *action.Configuration, name, ns string, version int) (*Rollback, error) {
	if cfg == nil || cfg.Releases == nil {
		return nil, errors.New("rollback: the Helm configuration has no release storage")
	}
	if err := chartutil.ValidateReleaseName(name); err != nil {
		return nil, fmt.Errorf("rollback %q: %w", name, err)
	}
	hist, err := History(cfg.Releases, name)
	if err != nil {
		return nil, fmt.Errorf("release %q in namespace %s: reading its history: %w", name, ns, err)
	}
	if len(hist) == 0 {
		return nil, fmt.Errorf("release %q not found in namespace %s: no revision to roll back to: %w", name, ns, ErrReleaseNotFound)
	}
	rb := &Rollback{Last: hist[0]}
	if rb.Target, err = rollbackTarget(hist, version); err != nil {
		return nil, fmt.Errorf("release %q in namespace %s: %w", name, ns, err)
	}
	for _, m := range []struct {
		rel *release.Release
		to  *Recorded
	}{{rb.Last, &rb.LastMethod}, {rb.Target, &rb.TargetMethod}} {
		if *m.to = recordedWith(ctx, cfg, ns, m.rel); m.to.Err != nil {
			return nil, fmt.Errorf("release %q in namespace %s: reading the apply method of revision %d: %w", name, ns, m.rel.Version, m.to.Err)
		}
	}
	return rb, nil
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
