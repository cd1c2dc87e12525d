package verb

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"helm.sh/helm/v3/pkg/postrender"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apis"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// OfflineBase is the base of an offline plan, which the chart of the plan
// request (the head) is compared with: exactly one of Chart (with Values)
// or Manifest.
type OfflineBase struct {
	Chart    string
	Values   []string
	Manifest string
	// PostRender is the base chart's in-process post-renderer (a GitOps
	// base's); no flag sets it.
	PostRender postrender.PostRenderer
	// Install: no base at all (a GitOps object new in the head); the head
	// is planned as an install (render.Base.Install).
	Install bool
}

// planOffline compares the base req.Offline (a chart render or a manifest
// file) with the head rendered as an upgrade of it, for the pre-merge gate: against the
// target Kubernetes version (--kube-version, --api-versions), with removed
// APIs marked; nothing reaches a cluster, and the result cannot be applied.
func (c *Config) planOffline(ctx context.Context, req PlanRequest) (*Planned, error) {
	from := req.Offline
	rules, err := req.Rules.ForChart(req.ChartRef)
	if err != nil {
		return nil, err
	}
	target, err := req.Render.OfflineTarget()
	if err != nil {
		return nil, err
	}
	base := render.Base{Chart: from.Chart, Values: from.Values, PostRender: from.PostRender, Install: from.Install}
	prevName := "base chart " + from.Chart
	if from.Manifest != "" {
		data, err := inputfile.Read(from.Manifest, "a manifest", inputfile.ManifestMax)
		if err != nil {
			return nil, fmt.Errorf("--from-manifest %w", err)
		}
		base.Manifest, prevName = string(data), "--from-manifest "+from.Manifest
	}
	c.progress("Rendering %s (head)", req.ChartRef)
	head, err := render.RenderOffline(ctx, c.Settings, req.ReleaseName, base, req.ChartRef, req.Render, target)
	if err != nil {
		return nil, c.offlineFailed(err)
	}
	in := plannerInput(head, req.Render.SkipCRDs)
	if head.Previous != nil {
		in.PreviousCRDs = chartCRDs(head.Previous.Chart)
	}
	in.BaseCRDsUnknown = from.Manifest != ""
	in.PreviousName = prevName
	in.HooksDisabled = req.Render.DisableHooks
	in.Ignore = rules
	in.RestartStale = req.Apply.RestartStale
	if !slices.Contains(req.Render.Values.ValueFiles, "-") { // stdin cannot be read twice
		c.progress("Rendering again to find the fields regenerated on every render")
		again, err := render.RenderOffline(ctx, c.Settings, req.ReleaseName, base, req.ChartRef, req.Render, target)
		if err != nil {
			return nil, c.offlineFailed(fmt.Errorf("second render (to find regenerated fields): %w", err))
		}
		in.SecondRender = again.Next.Manifest
	}
	in.APIs = apis.ForMinor(target.Minor) // APIs the target no longer serves
	offline := planner.Offline{Release: req.ReleaseName, Namespace: in.Release.Namespace}
	p, err := c.planner(offline.Parts(), "").Plan(ctx, in)
	if err != nil {
		return nil, err
	}
	c.warnSecretCopies(p)
	if req.Apply.Force {
		// Which PUTs the server refuses only a cluster can say.
		p.Notes = append(p.Notes, "--force: Helm replaces every object that exists with PUT; offline, the plan shows its patch, not what the PUT drops or whether the server accepts it")
	}
	return &Planned{Plan: p, Rendered: head, ChartRef: req.ChartRef, Render: req.Render, Apply: req.Apply}, nil
}

// offlineFailed returns err, a failed offline render, once the sanitiser
// knows the Secret values of the base it was rendered over: a template's
// `fail` can echo them (lookup answers with the base's objects).
func (c *Config) offlineFailed(err error) error {
	var head *render.HeadError
	if errors.As(err, &head) {
		c.Sanitizer.AddManifest(head.Base.Manifest)
	}
	return err
}
