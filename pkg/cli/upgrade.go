package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	helmcli "helm.sh/helm/v3/pkg/cli"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/report"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/upgrade"
)

// UpgradeOptions holds the flags and, after Complete, the dependencies of one
// run. Run never reads flags.
type UpgradeOptions struct {
	Streams  iostreams.Streams
	Settings *helmcli.EnvSettings
	Render   upgrade.RenderOptions

	Report           report.Flags
	Gate             gate.Flags
	DryRun           bool
	DetailedExitcode bool
	Apply            upgrade.ApplyRequest
	PlanOut          string
	Ignore           []string
	PlanIn           string
	PlanMaxAge       time.Duration
	// Recover settles the journal an interrupted apply left.
	Recover bool
	// Offline pre-merge mode: compare a base render with the head render
	// without any cluster access.
	Offline bool
	From    upgrade.OfflineRequest

	// Set by Complete.
	Config   *upgrade.Config
	Request  upgrade.PlanRequest
	AckSet   *gate.Acks
	Prompter gate.Prompter
	// Masker masks Secret values in the plan (one random key per run, or
	// the saved plan's); Sanitizer removes the release's Secret values from
	// what the server and Helm say.
	Masker    *redact.Masker
	Sanitizer *redact.Sanitizer
	// UserAgent marks every request of this tool (audit logs show it).
	UserAgent string
	// GitHubActions adds workflow-command annotations for destructive
	// changes (set when GITHUB_ACTIONS=true).
	GitHubActions bool
}

// NewUpgradeOptions returns options with Helm's environment (HELM_NAMESPACE,
// HELM_KUBECONTEXT, HELM_DRIVER, ...) as defaults, as a Helm plugin receives it.
func NewUpgradeOptions(streams iostreams.Streams) *UpgradeOptions {
	masker := redact.NewMasker()
	return &UpgradeOptions{Streams: streams, Settings: helmcli.New(), GitHubActions: os.Getenv("GITHUB_ACTIONS") == "true",
		Masker: masker, Sanitizer: redact.NewSanitizer(masker)}
}

// AddFlags registers the command's flags: Helm's global ones (namespace,
// kube context, ...), helm upgrade's render flags, and ours.
func (o *UpgradeOptions) AddFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	o.Settings.AddFlags(fs)
	o.Render.AddFlags(fs)
	o.Report.AddFlags(fs)
	o.Gate.AddFlags(fs)
	o.From.AddFlags(fs)
	fs.Var(&dryRunFlag{on: &o.DryRun}, "dry-run", "plan and report only; never write to the cluster. Accepts helm upgrade's values: --dry-run, --dry-run=client|server|true (the plan always dry-runs on the server), --dry-run=false|none")
	fs.Lookup("dry-run").NoOptDefVal = "client"
	fs.BoolVar(&o.DetailedExitcode, "detailed-exitcode", false, "with --dry-run: exit 0 when nothing changes, 2 when blocked, 3 when changes pass the gate")
	o.Apply.AddFlags(fs)
	fs.StringArrayVar(&o.Ignore, "ignore", nil, "show but do not count changes at a field path: FIELD_PATH, KIND:FIELD_PATH or KIND/NAME:FIELD_PATH (repeatable); never for a field the server refuses to change")
	fs.StringVar(&o.PlanOut, "plan-out", "", "save the plan (the exact render, what it was planned against, the acknowledgements) to FILE; it holds Secret values: keep it private")
	fs.StringVar(&o.PlanIn, "plan", "", "apply exactly the plan saved in FILE; refused if it was edited, made for another cluster or other flags, or if the release, the chart, the values or a changed object moved since")
	fs.DurationVar(&o.PlanMaxAge, "plan-max-age", 0, "with --plan: refuse a saved plan older than this (e.g. 1h); 0: no limit")
	fs.BoolVar(&o.Recover, "recover", false, "after an interrupted apply (killed mid-way): restore the objects it deleted for recreation from its journal, mark the revision it left pending as failed, remove the journal")
	fs.BoolVar(&o.Offline, "offline", false, "plan without cluster access: compare --from-chart or --from-manifest (base) with CHART (head); implies --dry-run")
}

// Complete fills the fields Run needs from flags and arguments.
func (o *UpgradeOptions) Complete(args []string) error {
	if o.Offline {
		o.DryRun = true // offline plans are never applied
	}
	o.Config = upgrade.NewConfig(o.Settings, o.Streams.ErrOut, o.UserAgent, o.Masker, o.Sanitizer)
	if o.Streams.ErrTTY {
		o.Config.Progress = func(format string, args ...interface{}) {
			fmt.Fprintf(o.Streams.ErrOut, format+"…\n", args...)
		}
	}
	o.Render.Namespace = o.Config.Namespace
	o.Request = upgrade.PlanRequest{ReleaseName: args[0], ChartRef: args[1], Render: o.Render, Ignore: o.Ignore,
		Apply: o.Apply, SavedMaxAge: o.PlanMaxAge}
	acks, err := o.Gate.Collect()
	if err != nil {
		return err
	}
	if o.PlanIn != "" {
		if o.Request.Saved, err = upgrade.LoadPlan(o.PlanIn, args[0], o.Config.Namespace); err != nil {
			return err
		}
		acks.Add(o.Request.Saved.Acks())
		o.Masker.Key = o.Request.Saved.MaskKey // masked values compare with the reviewed plan's
	}
	o.AckSet = acks
	if o.Prompter == nil {
		o.Prompter = gate.NewLinePrompter(o.Streams.In, o.Streams.ErrOut)
	}
	return nil
}

// Validate checks flag combinations.
func (o *UpgradeOptions) Validate() error {
	if err := o.Report.Validate(); err != nil {
		return err
	}
	if err := o.From.Validate(o.Offline); err != nil {
		return err
	}
	if !o.Offline && (o.Render.KubeVersion != "" || len(o.Render.APIVersions) > 0) {
		return errors.New("--kube-version and --api-versions need --offline; against a cluster, the cluster's own are used")
	}
	if o.Offline && (o.PlanIn != "" || o.PlanOut != "") {
		return errors.New("--plan and --plan-out need a cluster; they cannot be used with --offline")
	}
	if o.PlanMaxAge != 0 && o.PlanIn == "" {
		return errors.New("--plan-max-age needs --plan")
	}
	if o.PlanIn != "" && o.DryRun {
		return errors.New("--plan applies a saved plan; it cannot be used with --dry-run")
	}
	if o.Recover && (o.DryRun || o.PlanIn != "" || o.PlanOut != "") {
		return errors.New("--recover only resolves an interrupted apply; it cannot be used with --dry-run, --offline, --plan or --plan-out")
	}
	if o.Render.HideSecret && !o.DryRun {
		return errors.New("--hide-secret hides Secrets from the report of a --dry-run; as in helm upgrade, it needs --dry-run")
	}
	if o.DetailedExitcode && !o.DryRun {
		return errors.New("--detailed-exitcode needs --dry-run")
	}
	if err := render.ValidateServerSide(o.Render.ServerSide); err != nil {
		return err
	}
	if o.Apply.Force && o.Render.ForceConflicts {
		return errors.New("--force-replace (--force) and --force-conflicts cannot be used together (as in Helm 4)")
	}
	return nil
}

// Run plans the upgrade, reports it, gates it and (without --dry-run) applies it.
func (o *UpgradeOptions) Run(ctx context.Context) error {
	if o.Recover {
		return o.Config.Recover(ctx, o.Request.ReleaseName, o.Render)
	}
	planned, err := o.plan(ctx)
	if err != nil {
		return err
	}
	decision := gate.Evaluate(planned.Plan, o.AckSet, o.Gate.All)
	if err := o.report(planned); err != nil {
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
		case o.DetailedExitcode && planned.Plan.HasChanges():
			return withExitCode(ExitPending, nil)
		}
		return nil
	}
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

func (o *UpgradeOptions) printDecision(d gate.Decision) {
	for _, msg := range d.Messages() {
		fmt.Fprintln(o.Streams.ErrOut, msg)
	}
}

// savePlan saves the plan with --plan-out.
func (o *UpgradeOptions) savePlan(ctx context.Context, planned *upgrade.Planned) error {
	if o.PlanOut == "" {
		return nil
	}
	return o.Config.SavePlan(ctx, o.PlanOut, planned)
}

// plan runs the live or the offline plan within --timeout.
func (o *UpgradeOptions) plan(ctx context.Context) (*upgrade.Planned, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Render.TimeLimit())
	defer cancel()
	if o.Offline {
		req := o.From
		req.PlanRequest = o.Request
		return o.Config.PlanOffline(ctx, req)
	}
	return o.Config.Plan(ctx, o.Request)
}

// report writes the report on stdout and, in GitHub Actions, the workflow
// annotations on stderr (stdout carries the report; JSON must stay clean).
func (o *UpgradeOptions) report(planned *upgrade.Planned) error {
	opts := o.Report.Options(o.Streams.Color())
	opts.ChartDir = report.ChartDir(o.Request.ChartRef) // SARIF locations
	opts.HideSecrets = o.Render.HideSecret
	if err := report.Write(o.Streams.Out, planned.Plan, opts); err != nil {
		return err
	}
	if o.GitHubActions {
		return report.GitHubAnnotations(o.Streams.ErrOut, planned.Plan)
	}
	return nil
}
