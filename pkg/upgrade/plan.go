package upgrade

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// PlanRequest is what to plan: helm upgrade's arguments and render flags.
type PlanRequest struct {
	ReleaseName, ChartRef string
	Render                RenderOptions
	// Saved, when set, is the reviewed plan to apply (--plan): its render
	// replaces the new one, and the plan is refused if anything moved since.
	Saved *SavedPlan
}

// Planned is a plan with what is needed to save or apply it.
type Planned struct {
	Plan     *plan.Plan
	Rendered *render.Result
	// ChartRef and Render are the request's, for the saved plan and the apply.
	ChartRef string
	Render   RenderOptions
}

// Plan renders the release as `helm upgrade` would and plans it against the
// cluster. It sends no write but dry-run requests.
func (c *Config) Plan(ctx context.Context, req PlanRequest) (*Planned, error) {
	if err := c.Connect(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := render.Render(ctx, c.Helm, c.Settings, req.ReleaseName, req.ChartRef, req.Render)
	if err != nil {
		return nil, err
	}
	c.Logf("rendered %s in %s", req.ChartRef, time.Since(start).Round(time.Millisecond))
	for _, w := range res.Warnings {
		fmt.Fprintln(c.Out, "warning:", w)
	}
	if req.Saved != nil {
		if err := req.Saved.useIn(res, req.Render); err != nil {
			return nil, err
		}
	}
	start = time.Now()
	in := plannerInput(res)
	in.Release.ApplyMethod = plan.ApplyMethodCSA
	if res.ServerSideApply(req.Render.ServerSide) {
		in.Release.ApplyMethod = plan.ApplyMethodSSA
		in.Release.ToServerSide = !res.Install && res.ApplyMethod != plan.ApplyMethodSSA
	}
	in.Release.ForceConflicts = req.Render.ForceConflicts
	p, err := planner.New(planner.Live{Cluster: c.Cluster}, c.ServerVersion).Plan(ctx, in)
	if err != nil {
		return nil, err
	}
	if req.Saved != nil {
		if err := req.Saved.unmoved(p); err != nil {
			return nil, err
		}
	}
	c.Logf("planned %d objects in %s", len(p.Changes), time.Since(start).Round(time.Millisecond))
	return &Planned{Plan: p, Rendered: res, ChartRef: req.ChartRef, Render: req.Render}, nil
}

// plannerInput hands the render to the planner, with Helm's rules for the
// chart's crds/ directory as a note.
func plannerInput(res *render.Result) planner.Input {
	next := res.Next
	in := planner.Input{
		Release: plan.Release{
			Name:      next.Name,
			Namespace: next.Namespace,
			Revision:  next.Version,
			Chart:     next.Chart.Metadata.Name + "-" + next.Chart.Metadata.Version,
			Install:   res.Install,
		},
		NextManifest: next.Manifest,
	}
	if res.Previous != nil {
		in.PreviousManifest = res.Previous.Manifest
		in.Release.CurrentRevision = res.Previous.Version
	}
	for _, h := range next.Hooks {
		events := make([]string, 0, len(h.Events))
		for _, e := range h.Events {
			events = append(events, string(e))
		}
		in.Hooks = append(in.Hooks, plan.Hook{Kind: h.Kind, Name: h.Name, Events: events})
	}
	if crds := res.Chart.CRDObjects(); len(crds) > 0 {
		names := make([]string, 0, len(crds))
		for _, c := range crds {
			names = append(names, c.Filename)
		}
		verb := "are not upgraded or deleted by helm upgrade"
		if res.Install {
			verb = "are created by the install if absent, and never upgraded afterwards"
		}
		in.Notes = append(in.Notes, fmt.Sprintf("CRDs in the chart's crds/ directory (%s) %s", strings.Join(names, ", "), verb))
	}
	return in
}
