package verb

import (
	"context"
	"fmt"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/savedplan"
)

// SaveRequest is where and how to save a plan (--plan-out).
type SaveRequest struct {
	// Path is the file ("": the plan is not saved).
	Path string
	// Keys are what the plan is encrypted to.
	Keys savedplan.Keys
	// PlannedBy is who makes the plan (tool version, CI commit and run).
	PlannedBy savedplan.Provenance
	// Reports are the plan's report by format, as the plan job prints it
	// (show-plan prints them again).
	Reports map[string]string
}

// SavePlan writes the reviewed render of planned, what it was planned
// against and the apply flags, to req.Path (mode 0600, encrypted to
// req.Keys), and says so on Out. Without a path it does nothing.
func (c *Config) SavePlan(ctx context.Context, req SaveRequest, planned *Planned) error {
	return c.save(ctx, req, savedplan.Source{Plan: planned.Plan, Rendered: planned.Rendered,
		ChartRef: planned.ChartRef, Render: planned.Render, Force: planned.Apply.Force, RestartStale: planned.Apply.RestartStale})
}

// SaveUninstallPlan is SavePlan of an uninstall's plan: the last revision
// it deletes, its live objects and flags (see uninstallSource).
func (c *Config) SaveUninstallPlan(ctx context.Context, req SaveRequest, planned *PlannedUninstall) error {
	return c.save(ctx, req, savedplan.Source{Plan: planned.Plan, Rendered: uninstallSource(planned.Release),
		Uninstall: planned.Request.flags()})
}

// save writes the saved plan of src, made now here by req.PlannedBy.
func (c *Config) save(ctx context.Context, req SaveRequest, src savedplan.Source) error {
	if req.Path == "" {
		return nil
	}
	id, err := c.identity(ctx)
	if err != nil {
		return fmt.Errorf("--plan-out: %w", err)
	}
	src.Created, src.Cluster, src.PlannedBy, src.MaskKey, src.Reports = c.Now(), id, req.PlannedBy, c.Masker.Key, req.Reports
	if err := savedplan.Write(req.Path, savedplan.New(src), req.Keys); err != nil {
		return err
	}
	if req.Keys.Unencrypted {
		fmt.Fprintf(c.Out, "WARNING: --plan-unencrypted: %s holds Secret values in clear, and anyone who can write it can change what --plan applies\n", req.Path)
	}
	fmt.Fprintf(c.Out, "Plan saved to %s. Apply it with --plan %s\n", req.Path, req.Path)
	return nil
}
