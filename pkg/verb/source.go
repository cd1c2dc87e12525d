package verb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"helm.sh/helm/v3/pkg/action"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// renderWithEarlyLists renders the release (source) while the LISTs of the
// objects the last release names run (readEarly), and logs each stage's
// requests. A render refused on a pending revision says what the Lease
// tells of the run that left it.
func (c *Config) renderWithEarlyLists(ctx context.Context, req PlanRequest, state *releasestate.State, schemas *live.Schemas, begin time.Time) (*render.Result, string, *live.Early, error) {
	requests := c.Requests()
	helm, early := c.readEarly(ctx, req, state, schemas)
	res, again, err := c.source(ctx, req, helm, state, begin)
	if err != nil {
		if note := state.Lease.Note(); note != "" && errors.Is(err, releasestate.ErrReleasePending) {
			// Whether the run that left the revision pending still runs
			// is what the Lease tells (a killed apply's holder is gone).
			return nil, "", nil, fmt.Errorf("%w; %s", err, c.Sanitizer.Text(note, redact.RecordLimit))
		}
		return nil, "", nil, err
	}
	// The early LISTs are done well before the render usually; waiting for
	// them here keeps each request counted in one stage.
	early.Wait()
	c.logStage("render", time.Since(begin), c.Requests()-requests-early.Requests(), "")
	if early != nil {
		c.logStage("live (during render)", early.Took(), early.Requests(), fmt.Sprintf("LISTs of the %d kind(s) and namespace(s) the last release names", early.Lists()))
	}
	return res, again, early, nil
}

// source is what the plan compares with the last release: the chart
// rendered as helm upgrade renders it, with the manifest of a second
// render (renderAgain); or, for a rollback (req.Rollback), the stored
// revision it goes back to (rollbackSource), which nothing regenerates.
func (c *Config) source(ctx context.Context, req PlanRequest, helm *action.Configuration, state *releasestate.State, start time.Time) (*render.Result, string, error) {
	if req.Rollback != nil {
		res, err := c.rollbackSource(ctx, req, helm)
		return res, "", err
	}
	c.progress("Rendering %s", req.ChartRef)
	res, err := render.Render(ctx, helm, state, c.Settings, req.ReleaseName, req.ChartRef, req.Render)
	if err != nil {
		return nil, "", c.renderFailed(req.ReleaseName, err)
	}
	c.Logf("rendered %s in %s", req.ChartRef, time.Since(start).Round(time.Millisecond))
	for _, w := range res.Warnings {
		fmt.Fprintln(c.Out, "warning:", w)
	}
	again, err := c.renderAgain(ctx, req, res, helm, state)
	return res, again, err
}

// readEarly hands the release's history, read once (state), to the
// render(s) (releasestate.Snapshot), and starts the LISTs of the live objects of
// the kinds and namespaces the last release's manifest names, so they run
// while Helm renders (see live.Early). It returns c.Helm and no LISTs when
// the history could not be read (the render reports why), and no LISTs when there is no release to upgrade from; kinds only
// the new render names are read after it, by the planner. A server-side
// plan's schemas are read meanwhile too (live.Schemas.Prefetch).
func (c *Config) readEarly(ctx context.Context, req PlanRequest, state *releasestate.State, schemas *live.Schemas) (*action.Configuration, *live.Early) {
	if c.Cluster == nil || state.HistoryErr != nil {
		return c.Helm, nil
	}
	helm, prev := state.Snapshot(c.Helm), state.From
	if prev == nil {
		return helm, nil
	}
	heads := manifest.Heads(prev.Manifest, prev.Namespace, c.Cluster)
	// Unless the plan will be server-side (--server-side=true, or a
	// release Helm 4 recorded as applied server-side), the early LISTs
	// drop managedFields as a client-side plan does; a plan the render
	// finds server-side after all lists again (a Helm 4 release in a
	// storage whose record is not read).
	lean, recorded := earlyApplyMethod(req.Render.ServerSide, func() bool { return releasestate.RecordedServerSide(ctx, helm, prev) })
	// The schemas decide the objects of a release already applied
	// server-side (one moving to it is asked about); none under
	// --server-dry-run=all.
	if recorded && req.ServerDryRun != planner.ServerDryRunAll {
		schemas.Prefetch(ctx, heads)
	}
	// The planner hands each object it takes from these LISTs to the
	// sanitiser as it does with its own LISTs (planner.change): the
	// Secret-read transport need not decode them too.
	return helm, c.Cluster.StartPrefetch(redact.WithReadsSanitized(ctx), heads, live.MinListGroup, lean)
}

// earlyApplyMethod is how readEarly reads before the render under
// --server-side=flag: lean (managedFields dropped) unless the plan will be
// server-side, and fromRecord when the plan follows a release Helm 4
// recorded as applied server-side (recorded, asked only when the flag
// leaves the method to the record: not under false).
func earlyApplyMethod(flag string, recorded func() bool) (lean, fromRecord bool) {
	fromRecord = flag != render.ServerSideFalse && recorded()
	return flag != render.ServerSideTrue && !fromRecord, fromRecord
}

// renderAgain renders the release a second time from the same inputs, so
// the planner can tell the fields regenerated on every render (randAlphaNum,
// genCA, now) from real changes. It returns "" when values come from stdin,
// which cannot be read twice, and when first, the first render, cannot
// differ from a second one (render.Nondeterministic).
func (c *Config) renderAgain(ctx context.Context, req PlanRequest, first *render.Result, cfg *action.Configuration, state *releasestate.State) (string, error) {
	if slices.Contains(req.Render.Values.ValueFiles, "-") {
		c.Logf("values from stdin: no second render, regenerated fields are not marked")
		return "", nil
	}
	why := render.Nondeterministic(first, req.Render)
	if why == "" {
		c.Logf("no second render: neither the chart nor the values use a function whose output changes between renders")
		return "", nil
	}
	c.Logf("rendering again to find regenerated fields: %s", why)
	opts := req.Render
	opts.DependencyUpdate = false // the first render updated charts/ already
	c.progress("Rendering again to find the fields regenerated on every render")
	start := time.Now()
	res, err := render.Render(ctx, cfg, state, c.Settings, req.ReleaseName, req.ChartRef, opts)
	if err != nil {
		return "", c.renderFailed(req.ReleaseName, fmt.Errorf("second render (to find regenerated fields): %w", err))
	}
	c.Logf("rendered %s again in %s", req.ChartRef, time.Since(start).Round(time.Millisecond))
	return res.Next.Manifest, nil
}
