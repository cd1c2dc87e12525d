package upgrade

import (
	"context"
	"errors"
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
	if err := applicable(planned.Plan.Release); err != nil {
		return err
	}
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

// ErrServerSideApply is matched (errors.Is) by the error Apply returns for a
// server-side apply upgrade.
var ErrServerSideApply = errors.New("server-side apply is planned, not applied")

// applicable refuses what the apply cannot do faithfully: it applies with
// Helm 3's client, whose three-way patch would take the fields other field
// managers own and mix two apply methods in one release (see
// docs/limitations.md).
func applicable(rel plan.Release) error {
	if !rel.ServerSide() {
		return nil
	}
	return fmt.Errorf("%w: release %q in namespace %s is applied with server-side apply (Helm 4 recorded apply_method ssa, or --server-side=true); "+
		"this tool applies with Helm 3's client-side patch and refuses to mix the two. Nothing was written. "+
		"Review the plan with --dry-run, then upgrade with Helm 4 (helm upgrade, same flags), or pass --server-side=false to move the release to client-side apply",
		ErrServerSideApply, rel.Name, rel.Namespace)
}
