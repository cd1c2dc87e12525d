package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/report"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/savedplan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/verb"
)

// UpgradeOptions holds the flags and, after Complete, the dependencies of one
// upgrade: `upgrade RELEASE CHART` (and the root's `RELEASE CHART`). Run
// never reads flags.
type UpgradeOptions struct {
	*Factory
	Render render.Options
	runFlags
	Report report.Request
	Gate   ackFlags

	// Set by Complete. Request is built once from the flags; the actions
	// only read it.
	Config   *verb.Config
	Request  verb.PlanRequest
	AckSet   *gate.Acks
	Prompter gate.Prompter
}

// NewUpgradeOptions returns the options of an upgrade over a factory of
// its own (the drop-in helm's gate runs one upgrade, no tree).
func NewUpgradeOptions(streams iostreams.Streams) *UpgradeOptions {
	return newUpgradeOptions(NewFactory(streams))
}

func newUpgradeOptions(f *Factory) *UpgradeOptions { return &UpgradeOptions{Factory: f} }

// newUpgradeCommand is `upgrade RELEASE CHART`: always an upgrade, whatever
// the release is called (see route).
func newUpgradeCommand(f *Factory, runF runFunc) *cobra.Command {
	cmd := upgradeCommand(newUpgradeOptions(f), "upgrade RELEASE CHART [flags]", runF)
	cmd.Short = "Plan, gate and apply an upgrade of RELEASE to CHART (what RELEASE CHART does; always an upgrade, whatever RELEASE is called)"
	return cmd
}

// upgradeCommand is the upgrade over o, used as use: the root's
// `RELEASE CHART`, the `upgrade` verb, and the drop-in helm's gate.
func upgradeCommand(o *UpgradeOptions, use string, runF runFunc) *cobra.Command {
	cmd := recordedCommand(&cobra.Command{
		Use: use,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 2:
				return nil
			case o.Recover && len(args) == 1:
				return nil // a recovery applies no chart: the journal holds what it restores
			case o.Recover:
				return fmt.Errorf("--recover expects RELEASE (CHART may be left out), got %d argument(s); see --help", len(args))
			}
			return fmt.Errorf("expected RELEASE and CHART, got %d argument(s); see --help", len(args))
		},
	}, o.Factory, "", o, runF)
	o.AddFlags(cmd)
	return cmd
}

// AddFlags registers the command's flags: Helm's global ones (namespace,
// kube context, ...), helm upgrade's render flags, and ours.
func (o *UpgradeOptions) AddFlags(cmd *cobra.Command) { o.addFlagsTo(cmd.Flags()) }

func (o *UpgradeOptions) addFlagsTo(fs *pflag.FlagSet) {
	o.Settings.AddFlags(fs)
	addRenderFlags(fs, &o.Render)
	addReportFlags(fs, &o.Report)
	o.Gate.addFlags(fs)
	o.runFlags.addFlags(fs)
}

// Complete fills the fields Run needs from flags and arguments.
func (o *UpgradeOptions) Complete(args []string) error {
	chart := "" // none with --recover RELEASE (Args)
	if len(args) > 1 {
		chart = args[1]
	}
	return o.completeRequest(func() verb.PlanRequest { return o.planRequest(args[0], chart) })
}

// completeRequest fills what Run needs around the plan request that
// request makes once the release namespace is known: the run's
// configuration, the acknowledgements (--ack, --ack-file, then the saved
// plan's), the prompt, and in the request what every plan takes from the
// flags: --server-dry-run and the saved plan (--plan, --plan-max-age).
// The upgrade and the rollback complete so.
func (o *UpgradeOptions) completeRequest(request func() verb.PlanRequest) error {
	o.Config = o.RunConfig(o.Render.TimeLimit())
	o.Render.Namespace = o.Config.Namespace
	acks, err := o.Gate.collect()
	if err != nil {
		return err
	}
	o.AckSet = acks
	o.Request = request()
	o.Request.SavedMaxAge = o.PlanMaxAge
	if o.Request.ServerDryRun, err = planner.ParseServerDryRun(o.ServerDryRun); err != nil {
		return err
	}
	if o.Request.Saved, err = o.completeSaved(o.Streams.ErrOut, o.Request.ReleaseName, o.Render.Namespace, acks); err != nil {
		return err
	}
	o.Prompter = o.prompter(o.Prompter)
	return nil
}

// Validate checks flag combinations.
func (o *UpgradeOptions) Validate() error {
	if err := validateReport(o.Report); err != nil {
		return err
	}
	return o.runFlags.validate(o.Render)
}

// planRequest is the plan request of release from chart that the flags
// ask for (completeRequest adds what every plan takes). Offline plans are
// never applied: --offline implies --dry-run.
func (o *UpgradeOptions) planRequest(release, chart string) verb.PlanRequest {
	if o.Offline {
		o.DryRun = true
	}
	req := verb.PlanRequest{ReleaseName: release, ChartRef: chart, Render: o.Render, Rules: o.Rules,
		Apply: o.Apply, ForApply: !o.DryRun && !o.Recover}
	if o.Offline {
		from := o.From
		req.Offline = &from
	}
	return req
}

// Run plans the upgrade, reports it, gates it and (without --dry-run) applies it.
func (o *UpgradeOptions) Run(ctx context.Context) error {
	if o.Recover {
		// --recover is the recover verb, spelled as it was before verbs.
		r := &RecoverOptions{Factory: o.Factory, Yes: o.Yes, Release: o.Request.ReleaseName, Timeout: o.Render.TimeLimit(),
			Config: o.Config, Prompter: o.Prompter}
		return r.Run(ctx)
	}
	planned, err := o.Config.Plan(ctx, o.Request)
	if err != nil {
		return err
	}
	if line := planned.Plan.StaleConfigLine(); o.FailOnStaleConfig && line != "" {
		// Before the report, which shows it with the plan's other blockers.
		planned.Plan.Blockers = append(planned.Plan.Blockers, line+" (--fail-on-stale-config)")
	}
	decision := gate.Evaluate(planned.Plan, o.AckSet, o.Gate.All)
	return writeRun{
		report: func() error {
			return o.Config.Stage("report", func() error {
				return o.Report.Write(o.Streams.Out, o.Streams.ErrOut, planned.Plan, o.Streams.Color(), o.Request.ChartRef, o.Render.HideSecret)
			})
		},
		save: func() error { return o.savePlan(ctx, planned) },
		dryRunEnd: func() error {
			return dryRunExit(o.Streams.ErrOut, decision,
				o.DetailedExitcode && (planned.Plan.HasChanges() || o.FailOnRegenerated && planned.Plan.HasRegenerated()))
		},
		gateAndWrite: func() error { return o.gateAndApply(ctx, planned, decision) },
		dryRun:       o.DryRun,
		// The JSON document of an applied plan carries the rollout's
		// outcome: it is written once the watch ended.
		reportAfter: o.Report.Output == report.FormatJSON && !o.Apply.Watch.Off,
	}.run()
}

// gateAndApply asks for the acknowledgements still missing (on a terminal),
// and applies the plan the gate lets through.
func (o *UpgradeOptions) gateAndApply(ctx context.Context, planned *verb.Planned, decision gate.Decision) error {
	save := func() error { return o.savePlan(ctx, planned) }
	if err := passGate(ctx, o.Streams, o.Prompter, o.Request.ReleaseName, decision, save, "applying"); err != nil {
		return err
	}
	return o.Config.Apply(ctx, planned)
}

// savePlan saves planned with --plan-out, with who made it and its report
// as printed; without --plan-out it does nothing.
func (o *UpgradeOptions) savePlan(ctx context.Context, planned *verb.Planned) error {
	if o.SavedPlanToWrite == "" {
		return nil
	}
	reports, err := o.Report.Reports(planned.Plan, o.Request.ChartRef, o.Render.HideSecret)
	if err != nil {
		return err
	}
	return o.Config.SavePlan(ctx, verb.SaveRequest{Path: o.SavedPlanToWrite, Keys: o.PlanKeys,
		PlannedBy: savedplan.ProvenanceFrom(o.UserAgent, os.Getenv), Reports: reports}, planned)
}
