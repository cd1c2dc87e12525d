package render

import (
	"context"
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/release"
)

// Result is the rendered next revision of a release and what it was
// rendered against.
type Result struct {
	// Previous is the release Helm's upgrade treats as the current one: its
	// Manifest is the "original" of the three-way merge patch Helm sends, and
	// its Config is what --reuse-values / --reset-then-reuse-values reuse.
	// Exactly as in Helm's prepareUpgrade, it is the last revision when that
	// is deployed; otherwise the newest deployed revision; otherwise (no
	// revision deployed) the last revision if it failed or was superseded.
	// Nil when installing.
	Previous *release.Release
	// Last is the newest revision in storage, whatever its status (the one
	// the next revision number follows). Nil when the release has no
	// history. When upgrading it is Previous unless the last upgrade failed.
	Last *release.Release
	// Next is the rendered release, not stored: Manifest (without hooks),
	// Hooks (sorted as Helm runs them), Config (the user values Helm stores,
	// after --reuse-values and friends), Chart, Version, Info.Notes.
	Next *release.Release
	// ApplyMethod is the apply method Helm 4 recorded in Last:
	// plan.ApplyMethodSSA (server-side apply) or plan.ApplyMethodCSA; ""
	// when Last was written by Helm 3 or there is no Last. See
	// ServerSideApply.
	ApplyMethod string
	// Install is true when Next is an install (the release does not exist,
	// or every revision was uninstalled and kept, and --install was given).
	Install bool
	// Chart is the loaded chart as Helm rendered it. With --reuse-values,
	// Helm replaces Chart.Values by the previous release's coalesced values.
	Chart *chart.Chart
	// ChartPath is where the chart was found (a directory or an archive,
	// downloaded to the repository cache when it came from a repository).
	ChartPath string
	// Values are the user-supplied values as merged from the flags (-f,
	// --set, ...), before Helm combines them with the previous release's.
	Values map[string]interface{}
	// Warnings are things Helm would have printed (a deprecated chart, CRDs
	// that an install creates before rendering).
	Warnings []string
	// RollbackTo, when set, says that Next is no render but stored
	// revision RollbackTo made the next one: `helm rollback` (see Rollback).
	RollbackTo int
	// RollbackApplyMethod is, for a rollback, the apply method Helm 4
	// recorded with revision RollbackTo ("" as for ApplyMethod): Helm 4's
	// rollback under --server-side=auto applies with it, not with Last's
	// (getUpgradeServerSideValue of the target's ApplyMethod).
	RollbackApplyMethod string
	// helm3Only is, for a rollback, true when neither Last nor revision
	// RollbackTo records a Helm 4 apply method, both read: a release only
	// Helm 3 wrote (see CheckRollbackFlags).
	helm3Only bool
}

// ErrWriteRefused is returned if Helm's code path tries to write to the
// cluster or to the release storage during a render. It never should.
var ErrWriteRefused = errors.New("write refused while planning")

// Stored is the release's stored state a render starts from, read once
// before it (releasestate.State implements it): render reads no release
// state itself.
type Stored interface {
	// Revisions is the release's history, newest first, or why it could
	// not be read.
	Revisions() ([]*release.Release, error)
	// Snapshot is cfg with a read-only release storage holding those
	// revisions: what Helm's action runs on.
	Snapshot(cfg *action.Configuration) *action.Configuration
	// Missing is the refusal of an upgrade, without --install, of release
	// name in ns, which does not exist or whose every revision was
	// uninstalled.
	Missing(name, ns string) error
	// Upgrade is the revision an upgrade of release name in ns starts from
	// and the apply method Helm 4 recorded with the last revision (known
	// false: the storage cannot say), or why the upgrade is refused (a
	// pending last revision, none deployed, the method unreadable).
	Upgrade(name, ns string) (from *release.Release, method string, known bool, err error)
}

// Render renders the next revision of releaseName from chartRef as
// `helm upgrade [--install] --dry-run=server` would, through Helm's own
// install/upgrade actions (values semantics, hooks, post-renderer, notes,
// lookup and .Capabilities against the cluster), but on a copy of cfg whose
// kube client does not build the manifests (see renderClient) and whose
// release storage is a read-only snapshot of the release's history as
// stored, read before the render (Stored). It never writes to the cluster
// or to the storage.
//
// cfg must be set up for the release namespace (see releasestate.NewConfiguration);
// settings gives the repository, registry and plugin environment (nil means
// cli.New()). When ctx is done, Render returns ctx's error at once.
func Render(ctx context.Context, cfg *action.Configuration, stored Stored, settings *cli.EnvSettings, releaseName, chartRef string, opts Options) (*Result, error) {
	if cfg == nil || cfg.Releases == nil || cfg.KubeClient == nil || stored == nil {
		return nil, errors.New("render: the Helm configuration has no release storage or kube client")
	}
	if settings == nil {
		settings = cli.New()
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("rendering release %q: %w", releaseName, err)
	}
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := render(ctx, cfg, stored, settings, releaseName, chartRef, opts)
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-ctx.Done():
		// The render only reads; leaving it to finish in the background is safe.
		return nil, fmt.Errorf("rendering release %q: %w", releaseName, context.Cause(ctx))
	}
}

// render is Render's steps, each with its helpers in a file of its own:
// the configuration Helm's action runs on (configuration.go), the chart and
// values (chart.go), then the release's stored state, which says whether
// it is an install or an upgrade and from which revision, and Helm's
// action run as a dry run (actions.go).
func render(ctx context.Context, cfg *action.Configuration, stored Stored, settings *cli.EnvSettings, name, chartRef string, opts Options) (*Result, error) {
	ns := opts.Namespace
	if ns == "" {
		ns = settings.Namespace()
	}
	if err := chartutil.ValidateReleaseName(name); err != nil {
		return nil, fmt.Errorf("release name %q is invalid: %w", name, err)
	}
	run, cpo, post, err := actionConfig(cfg, settings, chartRef, opts)
	if err != nil {
		return nil, err
	}
	res, vals, err := loadChart(run, settings, chartRef, cpo, opts)
	if err != nil {
		return nil, err
	}

	// The release's history, read once; the action reads the same snapshot.
	if err := cfg.KubeClient.IsReachable(); err != nil {
		return nil, err
	}
	hist, err := stored.Revisions()
	if err != nil {
		storage := ns
		if opts.StorageNamespace != "" {
			storage = opts.StorageNamespace
		}
		return nil, fmt.Errorf("reading the history of release %q in namespace %s: %w", name, storage, err)
	}
	if len(hist) > 0 {
		res.Last = hist[0]
	}
	run.Releases = stored.Snapshot(cfg).Releases

	if res.Last == nil || res.Last.Info.Status == release.StatusUninstalled {
		if !opts.Install {
			return nil, stored.Missing(name, ns)
		}
		return renderInstall(ctx, run, res, name, ns, cpo, post, vals, opts)
	}
	from, method, known, err := stored.Upgrade(name, ns)
	if err != nil {
		return nil, err
	}
	if !known && opts.ServerSide != ServerSideTrue && opts.ServerSide != ServerSideFalse {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the apply method Helm 4 records cannot be read from the %s release storage: planned as client-side; pass --server-side=true for a release Helm 4 applied server-side", cfg.Releases.Name()))
	}
	res.ApplyMethod, res.Previous = method, from
	return renderUpgrade(ctx, run, res, name, ns, cpo, post, vals, opts)
}
