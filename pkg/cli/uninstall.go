package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/report"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/savedplan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/verb"
)

// UninstallOptions are `uninstall RELEASE`: plan what helm uninstall
// deletes and leaves, gate the data it loses, uninstall through Helm, and
// say what is still there.
type UninstallOptions struct {
	*Factory
	Report report.Request
	Gate   ackFlags
	// helm uninstall's flags.
	KeepHistory, DisableHooks, Wait, IgnoreNotFound bool
	Cascade, Description                            string
	Timeout                                         time.Duration
	DryRun, DetailedExitcode                        bool
	// Saved holds the saved plan's flags (--plan-out, --plan, their keys
	// and age limit), as the upgrade's.
	Saved runFlags

	// Set by Complete.
	Request  verb.UninstallRequest
	Config   *verb.Config
	AckSet   *gate.Acks
	Prompter gate.Prompter
}

// cascades are helm uninstall's --cascade values.
var cascades = []string{"background", "orphan", "foreground"}

// newUninstallCommand is `uninstall RELEASE`.
func newUninstallCommand(f *Factory, runF runFunc) *cobra.Command {
	o := &UninstallOptions{Factory: f}
	cmd := recordedCommand(&cobra.Command{
		Use:   "uninstall RELEASE",
		Short: "Plan, gate and run helm uninstall of RELEASE: what it deletes (data lost or recreatable), what it leaves and why",
		Long: `Plan helm uninstall of RELEASE: every object of its last revision that Helm
deletes, by verdict (data lost: a templated PersistentVolumeClaim and its
volume, a templated CRD with its custom resources, a templated Namespace, a
PersistentVolume; recreatable: the rest), and what stays in the cluster and
why (claims of StatefulSets' volumeClaimTemplates, objects with
helm.sh/resource-policy: keep, CRDs of the chart's crds/, hook objects).
Data loss blocks until acknowledged (--ack, --ack-file, the prompt), as for
an upgrade. Then Helm's own uninstall runs, holding the release's Lease, and
each planned deletion is read back: an object still there (a finalizer, a
failed delete) is named with why, and the exit code is 1. What is left in
the cluster is printed last.`,
		Args: releaseArg("uninstall"),
	}, f, "uninstall", o, runF)
	fs := cmd.Flags()
	f.AddFlags(fs)
	addReportFlags(fs, &o.Report)
	o.Gate.addFlags(fs)
	fs.Var(&dryRunFlag{on: &o.DryRun}, "dry-run", "plan and report only; never write to the cluster")
	fs.Lookup("dry-run").NoOptDefVal = "client"
	fs.BoolVar(&o.DetailedExitcode, "detailed-exitcode", false, "with --dry-run: exit 0 when nothing is deleted, 2 when blocked, 3 when deletions pass the gate")
	fs.BoolVar(&o.KeepHistory, "keep-history", false, "remove all associated resources and mark the release as deleted, but retain the release history")
	fs.StringVar(&o.Cascade, "cascade", "background", "must be \"background\", \"orphan\", or \"foreground\". Selects the deletion cascading strategy for the dependents")
	fs.BoolVar(&o.DisableHooks, "no-hooks", false, "prevent hooks from running during uninstallation")
	fs.BoolVar(&o.Wait, "wait", false, "if set, will wait until all the resources are deleted before returning. It will wait for as long as --timeout")
	fs.DurationVar(&o.Timeout, "timeout", render.DefaultTimeout, "time to wait for any individual Kubernetes operation (like Jobs for hooks)")
	fs.StringVar(&o.Description, "description", "", "add a custom description")
	fs.BoolVar(&o.IgnoreNotFound, "ignore-not-found", false, `treat "release not found" as a successful uninstall`)
	o.Saved.addSavedPlanFlags(fs)
	return cmd
}

// Complete builds the request and the run's configuration.
func (o *UninstallOptions) Complete(args []string) error {
	o.Config = o.RunConfig(o.Timeout)
	acks, err := o.Gate.collect()
	if err != nil {
		return err
	}
	o.AckSet = acks
	o.Request = verb.UninstallRequest{ReleaseName: args[0], KeepHistory: o.KeepHistory, Cascade: o.Cascade,
		DisableHooks: o.DisableHooks, Wait: o.Wait, Timeout: o.Timeout, Description: o.Description, ForApply: !o.DryRun,
		SavedMaxAge: o.Saved.PlanMaxAge}
	o.Prompter = o.prompter(o.Prompter)
	// The saved plan's keys and, with --plan, the plan and its
	// acknowledgements, read as the upgrade reads them.
	o.Request.Saved, err = o.Saved.completeSaved(o.Streams.ErrOut, args[0], o.Config.Namespace, acks)
	return err
}

// Validate checks the flags' values.
func (o *UninstallOptions) Validate() error {
	if err := validateReport(o.Report); err != nil {
		return err
	}
	switch {
	case !slices.Contains(cascades, o.Cascade):
		return fmt.Errorf("--cascade %q: want background, orphan or foreground", o.Cascade)
	case o.Timeout <= 0:
		return fmt.Errorf("--timeout %s: must be positive", o.Timeout)
	case o.DetailedExitcode && !o.DryRun:
		return errors.New("--detailed-exitcode needs --dry-run")
	}
	o.Saved.DryRun = o.DryRun
	return o.Saved.validateSaved()
}

// Run plans the uninstall, reports it, gates it and (without --dry-run)
// runs it.
func (o *UninstallOptions) Run(ctx context.Context) error {
	planned, err := o.Config.PlanUninstall(ctx, o.Request)
	if o.IgnoreNotFound && errors.Is(err, render.ErrReleaseNotFound) {
		// As Helm: nothing to do, and its line all the same.
		fmt.Fprintf(o.Streams.ErrOut, "%s (--ignore-not-found)\n", err)
		if o.HelmOut != nil {
			fmt.Fprintln(o.HelmOut, uninstalledLine(o.Request.ReleaseName))
		}
		return nil
	}
	if err != nil {
		return err
	}
	decision := gate.Evaluate(planned.Plan, o.AckSet, o.Gate.All)
	return writeRun{
		report: func() error {
			return o.Report.Write(o.Streams.Out, o.Streams.ErrOut, planned.Plan, o.Streams.Color(), "", false)
		},
		save: func() error { return o.savePlan(ctx, planned) },
		dryRunEnd: func() error {
			if err := dryRunExit(o.Streams.ErrOut, decision, o.DetailedExitcode && planned.Plan.HasChanges()); err != nil {
				return err
			}
			if o.HelmOut != nil {
				// helm uninstall --dry-run prints the same line.
				fmt.Fprintln(o.HelmOut, uninstalledLine(o.Request.ReleaseName))
			}
			return nil
		},
		gateAndWrite: func() error { return o.gateAndUninstall(ctx, planned, decision) },
		dryRun:       o.DryRun,
		// The JSON document of an applied uninstall carries what it left
		// (uninstalled): it is written once the uninstall was read back.
		reportAfter: o.Report.Output == report.FormatJSON,
	}.run()
}

// gateAndUninstall asks for the acknowledgements still missing (on a
// terminal), runs the uninstall the gate lets through, and says what it
// left.
func (o *UninstallOptions) gateAndUninstall(ctx context.Context, planned *verb.PlannedUninstall, decision gate.Decision) error {
	save := func() error { return o.savePlan(ctx, planned) }
	if err := passGate(ctx, o.Streams, o.Prompter, o.Request.ReleaseName, decision, save, "uninstalling"); err != nil {
		return err
	}
	res, err := o.Config.Uninstall(ctx, planned)
	if err != nil {
		return err
	}
	// What is still in the cluster comes last, for the user to delete on
	// purpose: Helm's failure, or an object held by a finalizer or not
	// deleted, fails the run (exit 1), said before the lists.
	w := o.Streams.ErrOut
	switch {
	case res.Failed != "":
		fmt.Fprintf(w, "Error: %s\n", res.Failed)
	case o.HelmOut != nil:
		fmt.Fprintln(o.HelmOut, uninstalledLine(o.Request.ReleaseName))
	default:
		fmt.Fprintln(w, uninstalledLine(o.Request.ReleaseName))
	}
	if len(res.Remaining) > 0 {
		fmt.Fprintf(w, "Error: %d object(s) the uninstall deleted are still in the cluster:\n", len(res.Remaining))
	}
	for _, l := range res.Remaining {
		fmt.Fprintln(w, "not deleted:", l)
	}
	for _, l := range res.Left {
		fmt.Fprintln(w, "left behind:", l)
	}
	if res.Failed != "" || len(res.Remaining) > 0 {
		return withExitCode(ExitError, nil)
	}
	return nil
}

// uninstalledLine is what helm uninstall prints for a release it
// uninstalled (cmd/helm/uninstall.go of Helm 3 and 4), which scripts parse.
func uninstalledLine(name string) string {
	return fmt.Sprintf("release %q uninstalled", name)
}

// savePlan saves planned with --plan-out, as the upgrade's savePlan.
func (o *UninstallOptions) savePlan(ctx context.Context, planned *verb.PlannedUninstall) error {
	if o.Saved.SavedPlanToWrite == "" {
		return nil
	}
	reports, err := o.Report.Reports(planned.Plan, "", false)
	if err != nil {
		return err
	}
	return o.Config.SaveUninstallPlan(ctx, verb.SaveRequest{Path: o.Saved.SavedPlanToWrite, Keys: o.Saved.PlanKeys,
		PlannedBy: savedplan.ProvenanceFrom(o.UserAgent, os.Getenv), Reports: reports}, planned)
}
