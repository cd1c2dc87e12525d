package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
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

func newUpgradeOptions(f *Factory) *UpgradeOptions {
	o := &UpgradeOptions{Factory: f}
	o.Report.GitHubActions = os.Getenv("GITHUB_ACTIONS") == "true"
	return o
}

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
	cmd := &cobra.Command{
		Use:           use,
		SilenceUsage:  true,
		SilenceErrors: true,
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
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Command = commandLine(displayName(cmd.Root()), args, cmd.Flags())
			o.Program = displayName(cmd.Root())
			return runVerb(cmd.Context(), o, args, runF)
		},
	}
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
	o.Config = o.RunConfig(o.Render.TimeLimit())
	o.Render.Namespace = o.Config.Namespace
	o.completePlanKeys()
	acks, err := o.Gate.collect()
	if err != nil {
		return err
	}
	chart := "" // none with --recover RELEASE (Args)
	if len(args) > 1 {
		chart = args[1]
	}
	if o.Request, err = o.planRequest(args[0], chart); err != nil {
		return err
	}
	o.addSavedAcks(acks)
	o.AckSet = acks
	return o.completePrompter()
}

// completePlanKeys sets the saved plan's keys: --plan-recipient,
// --plan-unencrypted and the environment's.
func (o *UpgradeOptions) completePlanKeys() {
	o.PlanKeys = savedplan.KeysFromEnv(os.Getenv, o.PlanRecipients, o.PlanUnencrypted)
	o.PlanKeys.Warnings = o.Streams.ErrOut
}

// readSaved reads the saved plan --plan names into req, checked for
// release in the release namespace (see savedplan.Verify); nothing without
// --plan.
func (o *UpgradeOptions) readSaved(release string, req *verb.PlanRequest) error {
	if o.SavedPlanToRead == "" {
		return nil
	}
	saved, err := savedplan.Verify(o.SavedPlanToRead, o.PlanKeys, release, o.Render.Namespace)
	req.Saved = saved
	return err
}

// addSavedAcks adds the acknowledgements the saved plan recorded to acks,
// warning when the plan was not encrypted.
func (o *UpgradeOptions) addSavedAcks(acks *gate.Acks) {
	if o.Request.Saved == nil {
		return
	}
	if o.Request.Saved.InClear {
		fmt.Fprintf(o.Streams.ErrOut, "WARNING: --plan-unencrypted: %s is not encrypted; only its checksum says it was not edited\n", o.SavedPlanToRead)
	}
	acks.Add(o.Request.Saved.Acks())
}

// completePrompter sets the prompt for missing acknowledgements, unless a
// test set one.
func (o *UpgradeOptions) completePrompter() error {
	if o.Prompter == nil {
		o.Prompter = gate.NewLinePrompter(o.Streams.In, o.Streams.ErrOut)
	}
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
// ask for; with --plan it carries the saved plan, read and checked for
// release in the release namespace. Offline plans are never applied:
// --offline implies --dry-run.
func (o *UpgradeOptions) planRequest(release, chart string) (verb.PlanRequest, error) {
	if o.Offline {
		o.DryRun = true
	}
	req := verb.PlanRequest{ReleaseName: release, ChartRef: chart, Render: o.Render, Rules: o.Rules,
		Apply: o.Apply, SavedMaxAge: o.PlanMaxAge, ForApply: !o.DryRun && !o.Recover}
	if o.Offline {
		from := o.From
		req.Offline = &from
	}
	dryRuns, err := planner.ParseServerDryRun(o.ServerDryRun)
	if err != nil {
		return req, err
	}
	req.ServerDryRun = dryRuns
	return req, o.readSaved(release, &req)
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
	write := func() error {
		return o.Config.Stage("report", func() error {
			return o.Report.Write(o.Streams.Out, o.Streams.ErrOut, planned.Plan, o.Streams.Color(), o.Request.ChartRef, o.Render.HideSecret)
		})
	}
	// The JSON document of an applied plan carries the rollout's outcome:
	// it is written once the watch ended (or the run stopped before).
	if !o.DryRun && o.Report.Output == report.FormatJSON && !o.Apply.Watch.Off {
		err := o.gateAndApply(ctx, planned, decision)
		if werr := write(); err == nil {
			err = werr
		}
		return err
	}
	if err := write(); err != nil {
		return err
	}
	if o.DryRun {
		if err := o.savePlan(ctx, planned); err != nil {
			return err
		}
		return dryRunExit(o.Streams.ErrOut, decision,
			o.DetailedExitcode && (planned.Plan.HasChanges() || o.FailOnRegenerated && planned.Plan.HasRegenerated()))
	}
	return o.gateAndApply(ctx, planned, decision)
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

// passGate is what a writing verb (upgrade, uninstall) does between its
// report and its first write: ask, on a terminal, for the acknowledgements
// the decision still misses, print the gate's messages, return the blocked
// exit when it does not let the operation through, save the plan (save:
// --plan-out; after the prompt, so the acknowledgements given there are
// kept), and stop if the run was interrupted meanwhile. doing names the
// write in that error.
func passGate(ctx context.Context, streams iostreams.Streams, prompter gate.Prompter, release string, decision gate.Decision, save func() error, doing string) error {
	if len(decision.Unacked) > 0 && len(decision.Refused) == 0 && streams.CanPrompt() {
		ok, err := gate.Confirm(prompter, streams.ErrOut, release, &decision)
		if err != nil {
			return err
		}
		if !ok {
			return withExitCode(ExitBlocked, errors.New("aborted at the prompt; nothing was written"))
		}
	}
	printDecision(streams.ErrOut, decision)
	if decision.Blocked() {
		return withExitCode(ExitBlocked, nil)
	}
	if err := save(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted before %s; nothing was written: %w", doing, err)
	}
	return nil
}

// dryRunExit ends a dry-run whose plan was reported: it prints the gate's
// messages and returns the blocked exit when the gate would not let the
// operation through, else the pending exit (--detailed-exitcode with
// changes) when pending.
func dryRunExit(w io.Writer, decision gate.Decision, pending bool) error {
	printDecision(w, decision)
	switch {
	case decision.Blocked():
		return withExitCode(ExitBlocked, nil)
	case pending:
		return withExitCode(ExitPending, nil)
	}
	return nil
}

// printDecision prints the gate's messages on w.
func printDecision(w io.Writer, d gate.Decision) {
	for _, msg := range d.Messages() {
		fmt.Fprintln(w, msg)
	}
}
