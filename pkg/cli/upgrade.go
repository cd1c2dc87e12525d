package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	helmcli "helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/report"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/savedplan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/upgrade"
)

// UpgradeOptions holds the flags and, after Complete, the dependencies of one
// run. Run never reads flags.
type UpgradeOptions struct {
	Streams  iostreams.Streams
	Settings *helmcli.EnvSettings
	Render   render.Options
	runFlags
	Report report.Request
	Gate   ackFlags
	// Masker masks Secret values (nil: a fresh random key); UserAgent marks
	// every request of this tool (audit logs show it).
	Masker    *redact.Masker
	UserAgent string
	// Command is the command line without flag values (see commandLine).
	Command string
	// Caller and Announce are the helm shim's (see upgrade.Config).
	Caller   string
	Announce func(rel *release.Release, installed bool) error

	// Set by Complete. Request is built once from the flags; the actions
	// only read it.
	Config   *upgrade.Config
	Request  upgrade.PlanRequest
	AckSet   *gate.Acks
	Prompter gate.Prompter
}

// NewUpgradeOptions returns options with Helm's environment (HELM_NAMESPACE,
// HELM_KUBECONTEXT, HELM_DRIVER, ...) as defaults, as a Helm plugin receives it.
func NewUpgradeOptions(streams iostreams.Streams) *UpgradeOptions {
	o := &UpgradeOptions{Streams: streams, Settings: helmcli.New()}
	o.Report.GitHubActions = os.Getenv("GITHUB_ACTIONS") == "true"
	return o
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
	o.Config = upgrade.NewConfig(o.Settings, o.Streams.ErrOut, o.UserAgent, o.Masker)
	o.Config.Command = o.Command
	o.Config.RequestTimeout = o.Render.TimeLimit()
	o.Config.Terminal = o.Streams.ErrTTY
	o.Config.Caller, o.Config.Announce = o.Caller, o.Announce
	if o.Streams.ErrTTY {
		o.Config.Progress = func(format string, args ...interface{}) {
			fmt.Fprintf(o.Streams.ErrOut, format+"…\n", args...)
		}
	}
	o.Render.Namespace = o.Config.Namespace
	o.PlanKeys = savedplan.KeysFromEnv(os.Getenv, o.PlanRecipients, o.PlanUnencrypted)
	o.PlanKeys.Warnings = o.Streams.ErrOut
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
	if o.Request.Saved != nil {
		if o.Request.Saved.InClear {
			fmt.Fprintf(o.Streams.ErrOut, "WARNING: --plan-unencrypted: %s is not encrypted; only its checksum says it was not edited\n", o.SavedPlanToRead)
		}
		acks.Add(o.Request.Saved.Acks())
	}
	o.AckSet = acks
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
func (o *UpgradeOptions) planRequest(release, chart string) (upgrade.PlanRequest, error) {
	if o.Offline {
		o.DryRun = true
	}
	req := upgrade.PlanRequest{ReleaseName: release, ChartRef: chart, Render: o.Render, Rules: o.Rules,
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
	if o.SavedPlanToRead == "" {
		return req, nil
	}
	saved, err := savedplan.Verify(o.SavedPlanToRead, o.PlanKeys, release, o.Render.Namespace)
	req.Saved = saved
	return req, err
}

// Run plans the upgrade, reports it, gates it and (without --dry-run) applies it.
func (o *UpgradeOptions) Run(ctx context.Context) error {
	if o.Recover {
		var confirm func(string) (bool, error)
		if !o.Yes {
			confirm = o.confirmRecover
		}
		return o.Config.Recover(ctx, o.Request.ReleaseName, o.Render, confirm)
	}
	planned, err := o.Config.Plan(ctx, o.Request)
	if err != nil {
		return err
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
		o.printDecision(decision)
		switch {
		case decision.Blocked():
			return withExitCode(ExitBlocked, nil)
		case o.DetailedExitcode && (planned.Plan.HasChanges() || o.FailOnRegenerated && planned.Plan.HasRegenerated()):
			return withExitCode(ExitPending, nil)
		}
		return nil
	}
	return o.gateAndApply(ctx, planned, decision)
}

// gateAndApply asks for the acknowledgements still missing (on a terminal),
// and applies the plan the gate lets through.
func (o *UpgradeOptions) gateAndApply(ctx context.Context, planned *upgrade.Planned, decision gate.Decision) error {
	if len(decision.Unacked) > 0 && len(decision.Refused) == 0 && o.Streams.CanPrompt() {
		ok, err := gate.Confirm(o.Prompter, o.Streams.ErrOut, o.Request.ReleaseName, &decision)
		if err != nil {
			return err
		}
		if !ok {
			return withExitCode(ExitBlocked, errors.New("aborted at the prompt; nothing was written"))
		}
	}
	o.printDecision(decision)
	if decision.Blocked() {
		return withExitCode(ExitBlocked, nil)
	}
	// After the prompt, so the acknowledgements given there are kept.
	if err := o.savePlan(ctx, planned); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted before applying; nothing was written: %w", err)
	}
	return o.Config.Apply(ctx, planned)
}

// confirmRecover asks, on a terminal, to type the release name before
// --recover restores what it printed; without one it refuses (--yes is
// how CI confirms).
func (o *UpgradeOptions) confirmRecover(string) (bool, error) {
	if !o.Streams.CanPrompt() {
		return false, fmt.Errorf("release %q: --recover re-creates the objects listed above: confirm on a terminal, or pass --yes; nothing was restored or changed", o.Request.ReleaseName)
	}
	return gate.ConfirmRelease(o.Prompter, o.Request.ReleaseName, "restore them")
}

// savePlan saves planned with --plan-out, with who made it and its report
// as printed; without --plan-out it does nothing.
func (o *UpgradeOptions) savePlan(ctx context.Context, planned *upgrade.Planned) error {
	if o.SavedPlanToWrite == "" {
		return nil
	}
	reports, err := o.Report.Reports(planned.Plan, o.Request.ChartRef, o.Render.HideSecret)
	if err != nil {
		return err
	}
	return o.Config.SavePlan(ctx, upgrade.SaveRequest{Path: o.SavedPlanToWrite, Keys: o.PlanKeys,
		PlannedBy: savedplan.ProvenanceFrom(o.UserAgent, os.Getenv), Reports: reports}, planned)
}

func (o *UpgradeOptions) printDecision(d gate.Decision) {
	for _, msg := range d.Messages() {
		fmt.Fprintln(o.Streams.ErrOut, msg)
	}
}
