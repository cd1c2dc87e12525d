package upgrade

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/pflag"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apis"
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

// AddFlags registers the base's flags (--from-chart, --from-values,
// --from-manifest).
func (r *OfflineRequest) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&r.FromChart, "from-chart", "", "with --offline: the base chart (directory, archive or reference)")
	fs.StringArrayVar(&r.FromValues, "from-values", nil, "with --offline --from-chart: values files for the base render (repeatable)")
	fs.StringVar(&r.FromManifest, "from-manifest", "", "with --offline: the base as a rendered manifest file")
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
// head rendered as an upgrade of it, for the pre-merge gate: against the
// target Kubernetes version (--kube-version, --api-versions), with removed
// APIs marked; nothing reaches a cluster, and the result cannot be applied.
func (c *Config) PlanOffline(ctx context.Context, req OfflineRequest) (*Planned, error) {
	rules, err := req.Rules.load(req.ChartRef)
	if err != nil {
		return nil, err
	}
	target, err := req.Render.OfflineTarget()
	if err != nil {
		return nil, err
	}
	base := render.Base{Chart: req.FromChart, Values: req.FromValues}
	prevName := "base chart " + req.FromChart
	if req.FromManifest != "" {
		data, err := os.ReadFile(req.FromManifest)
		if err != nil {
			return nil, fmt.Errorf("--from-manifest: %w", err)
		}
		base.Manifest, prevName = string(data), "--from-manifest "+req.FromManifest
	}
	c.progress("Rendering %s (head)", req.ChartRef)
	head, err := render.RenderOffline(ctx, c.Settings, req.ReleaseName, base, req.ChartRef, req.Render, target)
	if err != nil {
		return nil, c.offlineFailed(err)
	}
	in := plannerInput(head, req.Render.SkipCRDs)
	in.PreviousCRDs, in.BaseCRDsUnknown = chartCRDs(head.Previous.Chart), req.FromManifest != ""
	in.PreviousName = prevName
	in.HooksDisabled = req.Render.DisableHooks
	in.Ignore = rules
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
	p, err := c.planner(offline, "").Plan(ctx, in)
	if err != nil {
		return nil, err
	}
	c.warnSecretCopies(p)
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
