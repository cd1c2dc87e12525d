package upgrade

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// OfflineRequest is an offline plan: the head is PlanRequest's chart, the
// base exactly one of FromChart (with FromValues) or FromManifest.
type OfflineRequest struct {
	PlanRequest
	FromChart    string
	FromValues   []string
	FromManifest string
}

// Validate checks the base flags: exactly one base, offline only.
func (r OfflineRequest) Validate(offline bool) error {
	if offline {
		if (r.FromChart == "") == (r.FromManifest == "") {
			return errors.New("--offline needs exactly one of --from-chart or --from-manifest")
		}
	} else if r.FromChart != "" || r.FromManifest != "" || len(r.FromValues) > 0 {
		return errors.New("--from-chart, --from-values and --from-manifest need --offline")
	}
	if len(r.FromValues) > 0 && r.FromChart == "" {
		return errors.New("--from-values needs --from-chart")
	}
	return nil
}

// PlanOffline compares the base (a chart render or a manifest file) with the
// head render, for the pre-merge gate; nothing reaches a cluster, and the
// result cannot be applied.
func (c *Config) PlanOffline(ctx context.Context, req OfflineRequest) (*Planned, error) {
	rules, err := planner.ParseIgnoreRules(req.Ignore)
	if err != nil {
		return nil, err
	}
	headOpts := req.Render
	headOpts.Install = true
	c.progress("Rendering %s (head)", req.ChartRef)
	head, err := render.Render(ctx, render.NewOfflineConfiguration(), c.Settings, req.ReleaseName, req.ChartRef, headOpts)
	if err != nil {
		return nil, fmt.Errorf("head chart %s: %w", req.ChartRef, err)
	}
	in := plannerInput(head)
	in.Release.Install = false
	in.HooksDisabled = req.Render.DisableHooks
	in.Ignore = rules
	headReq := req.PlanRequest
	headReq.Render = headOpts
	if in.SecondRender, err = c.renderAgain(ctx, headReq, render.NewOfflineConfiguration()); err != nil {
		return nil, err
	}
	if req.FromManifest != "" {
		data, err := os.ReadFile(req.FromManifest)
		if err != nil {
			return nil, fmt.Errorf("--from-manifest: %w", err)
		}
		in.PreviousManifest, in.PreviousName = string(data), "--from-manifest "+req.FromManifest
	} else {
		c.progress("Rendering %s (base)", req.FromChart)
		baseOpts := RenderOptions{Namespace: req.Render.Namespace, Install: true}
		baseOpts.Values.ValueFiles = req.FromValues
		base, err := render.Render(ctx, render.NewOfflineConfiguration(), c.Settings, req.ReleaseName, req.FromChart, baseOpts)
		if err != nil {
			return nil, fmt.Errorf("base chart %s: %w", req.FromChart, err)
		}
		in.PreviousManifest, in.PreviousName = base.Next.Manifest, "base chart "+req.FromChart
		in.PreviousHooks = hookManifests(base.Next.Hooks)
	}
	offline := planner.Offline{Release: req.ReleaseName, Namespace: in.Release.Namespace}
	p, err := planner.New(offline, "").Plan(ctx, in)
	if err != nil {
		return nil, err
	}
	return &Planned{Plan: p, Rendered: head, ChartRef: req.ChartRef, Render: req.Render}, nil
}
