package upgrade

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/savedplan"
)

// Flags are the run's own flags (helm upgrade's render flags are
// RenderOptions): whether the plan is applied, how, saved plans, offline
// mode and --ignore. PlanRequest turns them into the actions' request.
type Flags struct {
	// DryRun plans and reports only (--dry-run in any of helm upgrade's
	// spellings, see dryRunFlag; implied by Offline).
	DryRun bool
	// DetailedExitcode: with DryRun, exit 3 when changes pass the gate.
	DetailedExitcode bool
	// FailOnRegenerated: with DetailedExitcode, updates of fields
	// regenerated on every render count as changes (exit 3).
	FailOnRegenerated bool
	// Apply is how the plan is applied: --force-replace (--force).
	Apply ApplyRequest
	// Rules are the ignore rules: --ignore and the rules file (PlanRequest.Rules).
	Rules Rules
	// ServerDryRun is --server-dry-run: needed (default) or all.
	ServerDryRun string
	// PlanOut saves the plan; PlanIn applies the saved plan, refused when
	// older than PlanMaxAge (0: no limit).
	PlanOut, PlanIn string
	PlanMaxAge      time.Duration
	// PlanRecipients (--plan-recipient) are the age recipients --plan-out
	// encrypts to; PlanUnencrypted (--plan-unencrypted) allows a plan in
	// clear. PlanKeys are all the saved plan's keys, the environment's
	// included (the command layer sets them).
	PlanRecipients  []string
	PlanUnencrypted bool
	PlanKeys        savedplan.Keys
	// Recover settles the journal an interrupted apply left; Yes confirms
	// it without asking (CI).
	Recover, Yes bool
	// Offline compares the base From with the chart without any cluster
	// access (pre-merge mode).
	Offline bool
	From    OfflineRequest
}

// AddFlags registers the run's flags.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	f.From.AddFlags(fs)
	fs.Var(&dryRunFlag{on: &f.DryRun}, "dry-run", "plan and report only; never write to the cluster. Accepts helm upgrade's values: --dry-run, --dry-run=client|server|true (the plan always dry-runs on the server), --dry-run=false|none")
	fs.Lookup("dry-run").NoOptDefVal = "client"
	fs.BoolVar(&f.DetailedExitcode, "detailed-exitcode", false, "with --dry-run: exit 0 when nothing changes, 2 when blocked, 3 when changes pass the gate")
	fs.BoolVar(&f.FailOnRegenerated, "fail-on-regenerated", false, "with --detailed-exitcode: count updates of fields regenerated on every render (a generated password the upgrade rotates) as changes (exit 3)")
	f.Apply.AddFlags(fs)
	f.Rules.AddFlags(fs)
	fs.StringVar(&f.ServerDryRun, "server-dry-run", string(planner.ServerDryRunNeeded), "which updates the plan sends to the API server as dry-runs: needed (where its answer can differ from what the tool derives: see docs/performance.md) or all")
	fs.StringVar(&f.PlanOut, "plan-out", "", "save the plan (the exact render, what it was planned against, the acknowledgements, the report) to FILE, encrypted with age to --plan-recipient or "+savedplan.EnvRecipients+" (or to "+savedplan.EnvPassphrase+")")
	fs.StringVar(&f.PlanIn, "plan", "", "apply exactly the plan saved in FILE, decrypted with "+savedplan.EnvIdentity+" (an identity file or the key) or "+savedplan.EnvPassphrase+"; refused if it was edited, made for another cluster or other flags, or if the release, the chart, the values or a changed object moved since")
	fs.StringArrayVar(&f.PlanRecipients, "plan-recipient", nil, "with --plan-out: an age recipient (age1…) to encrypt the saved plan to (repeatable; added to "+savedplan.EnvRecipients+")")
	fs.BoolVar(&f.PlanUnencrypted, "plan-unencrypted", false, "with --plan-out: save the plan in clear (Secret values readable, edits detectable only by a checksum); with --plan: accept such a plan")
	fs.DurationVar(&f.PlanMaxAge, "plan-max-age", 0, "with --plan: refuse a saved plan older than this (e.g. 1h); 0: no limit")
	fs.BoolVar(&f.Recover, "recover", false, "after an interrupted apply (killed mid-way): restore the objects it deleted for recreation from its journal, mark the revision it left pending as failed, remove the journal")
	fs.BoolVar(&f.Yes, "yes", false, "with --recover: restore without asking (CI); what it re-creates is still printed first")
	fs.BoolVar(&f.Offline, "offline", false, "plan without cluster access: compare --from-chart or --from-manifest (base) with CHART (head); implies --dry-run")
}

// Validate checks the combinations of the run's flags and the render flags
// r (after PlanRequest).
func (f *Flags) Validate(r RenderOptions) error {
	if err := f.From.Validate(f.Offline); err != nil {
		return err
	}
	for _, bad := range []struct {
		when bool
		msg  string
	}{
		{!f.Offline && (r.KubeVersion != "" || len(r.APIVersions) > 0), "--kube-version and --api-versions need --offline; against a cluster, the cluster's own are used"},
		{f.Offline && (f.PlanIn != "" || f.PlanOut != ""), "--plan and --plan-out need a cluster; they cannot be used with --offline"},
		{f.PlanMaxAge != 0 && f.PlanIn == "", "--plan-max-age needs --plan"},
		{(len(f.PlanRecipients) > 0) && f.PlanOut == "", "--plan-recipient needs --plan-out"},
		{f.PlanUnencrypted && f.PlanOut == "" && f.PlanIn == "", "--plan-unencrypted needs --plan-out or --plan"},
		{f.PlanIn != "" && f.DryRun, "--plan applies a saved plan; it cannot be used with --dry-run"},
		{f.Recover && (f.DryRun || f.PlanIn != "" || f.PlanOut != ""), "--recover only resolves an interrupted apply; it cannot be used with --dry-run, --offline, --plan or --plan-out"},
		{f.Yes && !f.Recover, "--yes confirms --recover only; destructive changes are acknowledged with --ack, --ack-file or --ack-all-destructive"},
		{r.HideSecret && !f.DryRun, "--hide-secret hides Secrets from the report of a --dry-run; as in helm upgrade, it needs --dry-run"},
		{f.DetailedExitcode && !f.DryRun, "--detailed-exitcode needs --dry-run"},
		{f.FailOnRegenerated && !f.DetailedExitcode, "--fail-on-regenerated needs --dry-run --detailed-exitcode"},
	} {
		if bad.when {
			return errors.New(bad.msg)
		}
	}
	if f.PlanOut != "" {
		if err := f.PlanKeys.ValidateForWrite(); err != nil {
			return err
		}
	}
	if err := render.ValidateServerSide(r.ServerSide); err != nil {
		return err
	}
	if f.Apply.Force && r.ForceConflicts {
		return errors.New("--force-replace (--force) and --force-conflicts cannot be used together (as in Helm 4)")
	}
	return nil
}

// PlanRequest is the plan request of release from chart with the render flags
// r; with --plan it carries the saved plan, read and checked for release in
// r.Namespace. Offline plans are never applied: Offline sets DryRun.
func (f *Flags) PlanRequest(release, chart string, r RenderOptions) (PlanRequest, error) {
	if f.Offline {
		f.DryRun = true
	}
	req := PlanRequest{ReleaseName: release, ChartRef: chart, Render: r, Rules: f.Rules,
		Apply: f.Apply, SavedMaxAge: f.PlanMaxAge, ForApply: !f.DryRun && !f.Recover}
	dryRuns, err := planner.ParseServerDryRun(f.ServerDryRun)
	if err != nil {
		return req, err
	}
	req.ServerDryRun = dryRuns
	if f.PlanIn == "" {
		return req, nil
	}
	saved, err := savedplan.Verify(f.PlanIn, f.PlanKeys, release, r.Namespace)
	req.Saved = saved
	return req, err
}

// PlanFor runs the plan of req the flags ask for — offline against
// f.From, else live — within --timeout.
func (c *Config) PlanFor(ctx context.Context, f Flags, req PlanRequest) (*Planned, error) {
	ctx, cancel := context.WithTimeout(ctx, req.Render.TimeLimit())
	defer cancel()
	defer c.boundByContext(ctx)() // Helm's requests too, which pass no context
	if f.Offline {
		offline := f.From
		offline.PlanRequest = req
		return c.PlanOffline(ctx, offline)
	}
	planned, err := c.Plan(ctx, req)
	return planned, c.timedOut(err)
}

// dryRunFlag is --dry-run with helm upgrade's spellings: alone it means
// "client" (Helm's NoOptDefVal); "client", "server" and "true" plan without
// writing; "false", "none" and "" apply. Both dry-run modes plan the same
// way here: the planner always asks the server with dryRun=All (Helm's
// "server"), which is what a plan needs to see immutable-field refusals.
type dryRunFlag struct {
	on   *bool
	mode string
}

func (f *dryRunFlag) String() string {
	if f.mode == "" {
		return strconv.FormatBool(*f.on)
	}
	return f.mode
}

func (f *dryRunFlag) Set(v string) error {
	switch v {
	case "client", "server", "true":
		*f.on = true
	case "false", "none", "":
		*f.on = false
	default:
		return fmt.Errorf("invalid dry-run value %q: want one of false, true, none, client, server (as helm upgrade)", v)
	}
	f.mode = v
	return nil
}

func (f *dryRunFlag) Type() string { return "string" }
