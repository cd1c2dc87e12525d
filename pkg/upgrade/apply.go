package upgrade

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apply"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/report"
)

// ApplyRequest is how to apply a reviewed plan.
type ApplyRequest struct {
	// Force passes --force-replace (Helm 3's --force) to Helm: objects
	// replaced with PUT; only when the user asked for it. Helm 4 refuses it
	// with server-side apply, and so does the apply.
	Force bool
}

// AddFlags registers the apply flags of helm upgrade that are not render
// flags: Helm 4's --force-replace and Helm 3's name of it, --force (both
// set Force; off unless given).
func (r *ApplyRequest) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&r.Force, "force-replace", false, "pass --force-replace to Helm (replace changed objects with PUT; client-side apply only); the plan is still gated")
	fs.BoolVar(&r.Force, "force", false, "Helm 3's name of --force-replace")
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
	if req.Force && !planned.Plan.Release.ServerSide() { // refused for server-side apply
		fmt.Fprintln(c.Out, "WARNING: --force-replace: Helm replaces changed objects with PUT instead of patching them")
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
		ApplyMethod: planned.Plan.Release.ApplyMethod,
		Description: c.describe(report.AuditLine(planned.Plan, planned.Render.Description)),
		Sanitizer:   c.Sanitizer,
		Log:         c.Logf,
	}, c.Out)
	if err != nil {
		return err
	}
	if c.Announce != nil {
		return c.Announce(rel, planned.Rendered.Install)
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

// describe adds who ran the upgrade, when known, to the release description.
func (c *Config) describe(line string) string {
	if c.Caller == "" {
		return line
	}
	return line + ", run by " + c.Caller + " through the helm shim"
}
