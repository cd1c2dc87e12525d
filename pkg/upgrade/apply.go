package upgrade

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apply"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/report"
)

// ApplyRequest is how to apply a reviewed plan.
type ApplyRequest struct {
	// Force passes --force to Helm (objects replaced with PUT); only when
	// the user asked for it.
	Force bool
}

// Apply hands exactly the reviewed render of planned to Helm, as
// planned.Apply says, recreating first the acknowledged recreate-required
// objects, and says on Out what became of the release.
func (c *Config) Apply(ctx context.Context, planned *Planned) error {
	req := planned.Apply
	if err := c.Connect(ctx); err != nil {
		return err
	}
	var recreate []plan.Change
	for _, ch := range planned.Plan.Changes {
		if ch.Action == plan.ActionUpdate && ch.Class == plan.ClassRecreateRequired && ch.Acknowledged {
			recreate = append(recreate, ch)
		}
	}
	c.progress("Applying revision %d through Helm", planned.Plan.Release.Revision)
	if req.Force {
		fmt.Fprintln(c.Out, "WARNING: --force: Helm replaces changed objects with PUT instead of patching them")
	}
	rel, err := apply.Apply(ctx, apply.Request{
		Config:      c.Helm,
		Cluster:     c.Cluster,
		Settings:    c.Settings,
		ReleaseName: planned.Plan.Release.Name,
		ChartRef:    planned.ChartRef,
		Render:      planned.Render,
		Rendered:    planned.Rendered,
		Recreate:    recreate,
		Force:       req.Force,
		Description: report.AuditLine(planned.Plan, planned.Render.Description),
		Sanitizer:   c.Sanitizer,
		Log:         c.Logf,
	}, c.Out)
	if err != nil {
		return err
	}
	verb := "upgraded"
	if planned.Rendered.Install {
		verb = "installed"
	}
	fmt.Fprintf(c.Out, "Release %q %s: revision %d, status %s\n", rel.Name, verb, rel.Version, rel.Info.Status)
	writeNotes(c.Out, rel.Info.Notes, planned.Render.HideNotes)
	return nil
}

// writeNotes prints the chart's NOTES after an apply, as helm upgrade does,
// unless --hide-notes.
func writeNotes(w io.Writer, notes string, hide bool) {
	if hide || strings.TrimSpace(notes) == "" {
		return
	}
	fmt.Fprintf(w, "NOTES:\n%s\n", strings.TrimRight(notes, "\n"))
}
