package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"helm.sh/helm/v3/pkg/action"
	helmcli "helm.sh/helm/v3/pkg/cli"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apply"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/report"
)

// UpgradeOptions holds the flags and, after Complete, the dependencies of one
// run. Run never reads flags.
type UpgradeOptions struct {
	Streams  Streams
	Settings *helmcli.EnvSettings
	Render   render.Options

	DryRun            bool
	DetailedExitcode  bool
	Output            string
	DiffContext       int
	Acks              []string
	AckFile           string
	AckAllDestructive bool
	Force             bool
	PlanOut           string
	PlanIn            string
	// Offline pre-merge mode: compare a base render with the head render
	// without any cluster access.
	Offline      bool
	FromChart    string
	FromValues   []string
	FromManifest string

	// Set by Complete.
	ReleaseName string
	ChartRef    string
	Namespace   string
	AckSet      *gate.Acks
	Saved       *plan.Saved
	Prompter    gate.Prompter
	Logf        func(format string, args ...interface{})
	// UserAgent marks every request of this tool (audit logs show it).
	UserAgent string
	// GitHubActions adds workflow-command annotations for destructive
	// changes (set when GITHUB_ACTIONS=true).
	GitHubActions bool
	// Masker masks Secret values in the plan (issue 10: one random key per
	// run; nil masks without a key).
	Masker *redact.Masker
	// Sanitizer removes the release's Secret values from what the server
	// and Helm say (issue 10); the planner fills it.
	Sanitizer *redact.Sanitizer
}

// NewUpgradeOptions returns options with Helm's environment (HELM_NAMESPACE,
// HELM_KUBECONTEXT, HELM_DRIVER, ...) as defaults, as a Helm plugin receives it.
func NewUpgradeOptions(streams Streams) *UpgradeOptions {
	masker := redact.NewMasker()
	return &UpgradeOptions{Streams: streams, Settings: helmcli.New(), Output: "text", DiffContext: 3,
		GitHubActions: os.Getenv("GITHUB_ACTIONS") == "true", Masker: masker, Sanitizer: redact.NewSanitizer(masker)}
}

// AddFlags registers the command's flags: Helm's global ones (namespace,
// kube context, ...), helm upgrade's render flags, and ours.
func (o *UpgradeOptions) AddFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	o.Settings.AddFlags(fs)
	o.Render.AddFlags(fs)
	fs.BoolVar(&o.DryRun, "dry-run", false, "plan and report only; never write to the cluster")
	fs.BoolVar(&o.DetailedExitcode, "detailed-exitcode", false, "with --dry-run: exit 0 when nothing changes, 2 when blocked, 3 when changes pass the gate")
	fs.StringVarP(&o.Output, "output", "o", o.Output, "report format: text, json or markdown")
	fs.IntVar(&o.DiffContext, "diff-context", o.DiffContext, "lines of context in diffs")
	fs.StringArrayVar(&o.Acks, "ack", nil, "acknowledge a destructive change: KIND/NAME, KIND/NAMESPACE/NAME, optionally @FINGERPRINT (repeatable)")
	fs.StringVar(&o.AckFile, "ack-file", "", "YAML list of acknowledgements {kind, namespace, name, fingerprint, reason}")
	fs.BoolVar(&o.AckAllDestructive, "ack-all-destructive", false, "acknowledge every destructive change (emergencies only; each is named in a warning)")
	fs.BoolVar(&o.Force, "force", false, "pass --force to Helm (replace objects with PUT); the plan is still gated")
	fs.StringVar(&o.PlanOut, "plan-out", "", "save the plan (the exact render, what it was planned against, the acknowledgements) to FILE; it holds Secret values: keep it private")
	fs.StringVar(&o.PlanIn, "plan", "", "apply exactly the plan saved in FILE; refused if the release, the chart, the values or a changed object moved since")
	fs.BoolVar(&o.Offline, "offline", false, "plan without cluster access: compare --from-chart or --from-manifest (base) with CHART (head); implies --dry-run")
	fs.StringVar(&o.FromChart, "from-chart", "", "with --offline: the base chart (directory, archive or reference)")
	fs.StringArrayVar(&o.FromValues, "from-values", nil, "with --offline --from-chart: values files for the base render (repeatable)")
	fs.StringVar(&o.FromManifest, "from-manifest", "", "with --offline: the base as a rendered manifest file")
}

// Complete fills the fields Run needs from flags and arguments.
func (o *UpgradeOptions) Complete(cmd *cobra.Command, args []string) error {
	o.ReleaseName, o.ChartRef = args[0], args[1]
	if flags, ok := o.Settings.RESTClientGetter().(*genericclioptions.ConfigFlags); ok && o.UserAgent != "" {
		warnings := sanitizedWarnings(o.Streams.ErrOut, o.Sanitizer) // issue 10
		flags.WrapConfigFn = func(c *rest.Config) *rest.Config {
			c.UserAgent = o.UserAgent
			c.WarningHandler = warnings // issue 10
			return c
		}
	}
	o.Namespace = o.Settings.Namespace()
	if o.Offline {
		o.DryRun = true // offline plans are never applied
	}
	o.Render.Namespace = o.Namespace
	o.Logf = func(string, ...interface{}) {}
	if o.Settings.Debug {
		o.Logf = func(format string, args ...interface{}) {
			fmt.Fprintf(o.Streams.ErrOut, "debug: "+format+"\n", args...)
		}
	}
	acks, err := gate.ParseAcks(o.Acks)
	if err != nil {
		return err
	}
	if o.AckFile != "" {
		fromFile, err := gate.ReadAckFile(o.AckFile)
		if err != nil {
			return err
		}
		acks.Add(fromFile)
	}
	if o.PlanIn != "" {
		saved, err := plan.ReadSaved(o.PlanIn)
		if err != nil {
			return err
		}
		if saved.Release.Name != o.ReleaseName || saved.Release.Namespace != o.Namespace {
			return fmt.Errorf("--plan %s was made for release %s/%s, not %s/%s", o.PlanIn,
				saved.Release.Namespace, saved.Release.Name, o.Namespace, o.ReleaseName)
		}
		o.Saved = saved
		if len(saved.MaskKey) > 0 { // issue 10 bridge: mask as the plan did
			o.Masker.Key = saved.MaskKey
		}
		acks.Add(gate.FromSaved(saved.Acknowledged))
	}
	o.AckSet = acks
	if o.Prompter == nil {
		o.Prompter = gate.NewLinePrompter(o.Streams.In, o.Streams.ErrOut)
	}
	return nil
}

// Validate checks flag combinations.
func (o *UpgradeOptions) Validate() error {
	switch o.Output {
	case "text", "json", "markdown":
	default:
		return fmt.Errorf("--output %q: want text, json or markdown", o.Output)
	}
	if o.Offline {
		if (o.FromChart == "") == (o.FromManifest == "") {
			return errors.New("--offline needs exactly one of --from-chart or --from-manifest")
		}
	} else if o.FromChart != "" || o.FromManifest != "" || len(o.FromValues) > 0 {
		return errors.New("--from-chart, --from-values and --from-manifest need --offline")
	}
	if len(o.FromValues) > 0 && o.FromChart == "" {
		return errors.New("--from-values needs --from-chart")
	}
	if o.Offline && (o.PlanIn != "" || o.PlanOut != "") {
		return errors.New("--plan and --plan-out need a cluster; they cannot be used with --offline")
	}
	if o.PlanIn != "" && o.DryRun {
		return errors.New("--plan applies a saved plan; it cannot be used with --dry-run")
	}
	if o.DetailedExitcode && !o.DryRun {
		return errors.New("--detailed-exitcode needs --dry-run")
	}
	if o.DiffContext < 0 {
		return fmt.Errorf("--diff-context %d: must be 0 or more", o.DiffContext)
	}
	return nil
}

// Run plans the upgrade, reports it, gates it and (without --dry-run) applies it.
func (o *UpgradeOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	timeout := o.Render.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	planCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	build := o.plan
	if o.Offline {
		build = o.offlinePlan
	}
	pl, err := build(planCtx)
	if err != nil {
		return err
	}
	p := pl.plan
	decision := gate.Evaluate(p, o.AckSet, o.AckAllDestructive)
	if err := report.Write(o.Streams.Out, p, o.reportOptions()); err != nil {
		return err
	}
	if o.GitHubActions {
		// On stderr: stdout carries the report (JSON must stay clean); the
		// runner reads workflow commands from both.
		if err := report.GitHubAnnotations(o.Streams.ErrOut, p); err != nil {
			return err
		}
	}
	if o.DryRun {
		if o.PlanOut != "" {
			if err := o.savePlan(pl); err != nil {
				return err
			}
		}
		o.printDecision(decision)
		switch {
		case decision.Blocked():
			return withExitCode(ExitBlocked, nil)
		case o.DetailedExitcode && p.HasChanges():
			return withExitCode(ExitPending, nil)
		}
		return nil
	}
	if len(decision.Unacked) > 0 && len(decision.Refused) == 0 && o.Streams.CanPrompt() {
		ok, err := gate.Confirm(o.Prompter, o.Streams.ErrOut, o.ReleaseName, &decision)
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
	if o.PlanOut != "" {
		// After the prompt, so the acknowledgements given there are kept.
		if err := o.savePlan(pl); err != nil {
			return err
		}
	}
	if o.Force {
		fmt.Fprintln(o.Streams.ErrOut, "WARNING: --force: Helm replaces changed objects with PUT instead of patching them")
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted before applying; nothing was written: %w", err)
	}
	return o.apply(ctx, pl)
}

// apply hands the reviewed render to Helm and reports the outcome.
func (o *UpgradeOptions) apply(ctx context.Context, pl *planned) error {
	var recreate []plan.Change
	for _, c := range pl.plan.Changes {
		if c.Action == plan.ActionUpdate && c.Class == plan.ClassRecreateRequired && c.Acknowledged {
			recreate = append(recreate, c)
		}
	}
	rel, err := apply.Apply(ctx, apply.Request{
		Config:      pl.config,
		Settings:    o.Settings,
		ReleaseName: o.ReleaseName,
		ChartRef:    o.ChartRef,
		Render:      o.Render,
		Rendered:    pl.rendered,
		Recreate:    recreate,
		Force:       o.Force,
		Description: gate.AuditLine(pl.plan, o.Render.Description),
		Log:         o.Logf,
		Sanitizer:   o.Sanitizer, // issue 10
	}, o.Streams.ErrOut)
	if err != nil {
		return err
	}
	verb := "upgraded"
	if pl.rendered.Install {
		verb = "installed"
	}
	fmt.Fprintf(o.Streams.ErrOut, "Release %q %s: revision %d, status %s\n", rel.Name, verb, rel.Version, rel.Info.Status)
	return nil
}

func (o *UpgradeOptions) reportOptions() report.Options {
	ctxLines := o.DiffContext
	if ctxLines == 0 {
		ctxLines = report.NoContext // report treats 0 as "default"
	}
	return report.Options{Format: o.Output, Color: o.Streams.Color(), Context: ctxLines}
}

func (o *UpgradeOptions) printDecision(d gate.Decision) {
	for _, msg := range d.Messages() {
		fmt.Fprintln(o.Streams.ErrOut, msg)
	}
}

// planned is a plan with what is needed to apply it.
type planned struct {
	plan     *plan.Plan
	rendered *render.Result
	config   *action.Configuration
}

// plan renders the release and builds the plan against the cluster.
func (o *UpgradeOptions) plan(ctx context.Context) (*planned, error) {
	getter := o.Settings.RESTClientGetter()
	restConfig, err := getter.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	if o.Settings.QPS == 0 {
		// In-flight requests are bounded by the planner's concurrency; the
		// client-side default (5/s) would make a 1000-object plan take
		// minutes. API Priority and Fairness still protects the server.
		restConfig.QPS = -1
	}
	restConfig.Timeout = 30 * time.Second
	if deadline, ok := ctx.Deadline(); ok {
		restConfig.Timeout = time.Until(deadline)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("cluster client: %w", err)
	}
	version, err := disco.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("cluster unreachable at %s: %w", restConfig.Host, err)
	}
	cfg, err := render.NewConfiguration(getter, o.Namespace, os.Getenv("HELM_DRIVER"), o.Logf)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := render.Render(ctx, cfg, o.Settings, o.ReleaseName, o.ChartRef, o.Render)
	if err != nil {
		return nil, err
	}
	o.Logf("rendered %s in %s", o.ChartRef, time.Since(start).Round(time.Millisecond))
	for _, w := range res.Warnings {
		fmt.Fprintln(o.Streams.ErrOut, "warning:", w)
	}
	groups, err := restmapper.GetAPIGroupResources(disco)
	if err != nil {
		return nil, fmt.Errorf("discovering API resources: %w", err)
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	cluster := &live.Cluster{Dynamic: dyn, Mapper: restmapper.NewDiscoveryRESTMapper(groups)}
	if o.Saved != nil {
		if err := useSaved(o.Saved, res, o.Render); err != nil {
			return nil, err
		}
	}
	start = time.Now()
	addHookSecrets(o.Sanitizer, res) // issue 10
	pln := planner.New(cluster, version.GitVersion)
	pln.Masker, pln.Sanitizer = o.Masker, o.Sanitizer // issue 10
	p, err := pln.Plan(ctx, plannerInput(res))
	if err != nil {
		return nil, err
	}
	if o.Saved != nil {
		if err := unmoved(o.Saved, p); err != nil {
			return nil, err
		}
	}
	o.Logf("planned %d objects in %s", len(p.Changes), time.Since(start).Round(time.Millisecond))
	return &planned{plan: p, rendered: res, config: cfg}, nil
}

// savePlan writes the reviewed render and what it was planned against.
func (o *UpgradeOptions) savePlan(pl *planned) error {
	res := pl.rendered
	saved := &plan.Saved{
		ChartRef:     o.ChartRef,
		ChartDigest:  render.ChartDigest(res.Chart),
		ValuesDigest: render.ValuesDigest(res.Values, o.Render),
		Manifest:     res.Next.Manifest,
		Hooks:        res.Next.Hooks,
		Notes:        res.Next.Info.Notes,
		Acknowledged: gate.ToSaved(pl.plan),
		MaskKey:      o.Masker.Key, // issue 10 bridge
	}
	saved.Release.Name, saved.Release.Namespace = res.Next.Name, res.Next.Namespace
	if res.Last != nil {
		saved.Release.LastRevision = res.Last.Version
	}
	for _, c := range pl.plan.Changes {
		if c.Action != plan.ActionNoop && c.LiveResourceVersion != "" {
			saved.Objects = append(saved.Objects, plan.SavedObject{Object: c.ID.String(),
				ResourceVersion: c.LiveResourceVersion, StateDigest: plan.StateDigest(c)})
		}
	}
	if err := saved.Write(o.PlanOut); err != nil {
		return err
	}
	fmt.Fprintf(o.Streams.ErrOut, "Plan saved to %s (it holds the rendered manifest, Secrets included: keep it private). Apply it with --plan %s\n", o.PlanOut, o.PlanOut)
	return nil
}

// useSaved checks that the release, chart and values are those of the saved
// plan and puts the saved render in place of the new one: what is applied is
// what was reviewed, even when templates are not deterministic.
func useSaved(saved *plan.Saved, res *render.Result, opts render.Options) error {
	last := 0
	if res.Last != nil {
		last = res.Last.Version
	}
	if last != saved.Release.LastRevision {
		return fmt.Errorf("saved plan is stale: release %s moved from revision %d to %d since the plan; plan again", saved.Release.Name, saved.Release.LastRevision, last)
	}
	if d := render.ChartDigest(res.Chart); d != saved.ChartDigest {
		return fmt.Errorf("saved plan is stale: chart %s changed since the plan; plan again", saved.ChartRef)
	}
	if d := render.ValuesDigest(res.Values, opts); d != saved.ValuesDigest {
		return errors.New("saved plan is stale: the values (-f, --set, --reuse-values, ...) differ from the plan's; plan again")
	}
	res.Next.Manifest = saved.Manifest
	res.Next.Hooks = saved.Hooks
	res.Next.Info.Notes = saved.Notes
	return nil
}

// unmoved refuses a saved plan when an object it changes moved in the cluster.
func unmoved(saved *plan.Saved, p *plan.Plan) error {
	now := map[string]plan.Change{}
	for _, c := range p.Changes {
		now[c.ID.String()] = c
	}
	for _, o := range saved.Objects {
		c := now[o.Object]
		if plan.StateDigest(c) != o.StateDigest {
			return fmt.Errorf("saved plan is stale: %s changed in the cluster since the plan (resourceVersion %s, now %q); plan again",
				o.Object, o.ResourceVersion, c.LiveResourceVersion)
		}
	}
	return nil
}

// offlinePlan compares the base (a chart render or a manifest file) with the
// head render; nothing reaches a cluster.
func (o *UpgradeOptions) offlinePlan(ctx context.Context) (*planned, error) {
	headOpts := o.Render
	headOpts.Install = true
	head, err := render.Render(ctx, render.NewOfflineConfiguration(), o.Settings, o.ReleaseName, o.ChartRef, headOpts)
	if err != nil {
		return nil, fmt.Errorf("head chart %s: %w", o.ChartRef, err)
	}
	in := plannerInput(head)
	in.Release.Install = false
	if o.FromManifest != "" {
		data, err := os.ReadFile(o.FromManifest)
		if err != nil {
			return nil, fmt.Errorf("--from-manifest: %w", err)
		}
		in.PreviousManifest, in.PreviousName = string(data), "--from-manifest "+o.FromManifest
	} else {
		baseOpts := render.Options{Namespace: o.Namespace, Install: true}
		baseOpts.Values.ValueFiles = o.FromValues
		base, err := render.Render(ctx, render.NewOfflineConfiguration(), o.Settings, o.ReleaseName, o.FromChart, baseOpts)
		if err != nil {
			return nil, fmt.Errorf("base chart %s: %w", o.FromChart, err)
		}
		in.PreviousManifest, in.PreviousName = base.Next.Manifest, "base chart "+o.FromChart
	}
	pln := planner.New(nil, "")
	pln.Masker, pln.Sanitizer = o.Masker, o.Sanitizer // issue 10
	p, err := pln.Plan(ctx, in)
	if err != nil {
		return nil, err
	}
	return &planned{plan: p, rendered: head}, nil
}

// plannerInput converts the render result into the planner's input.
func plannerInput(res *render.Result) planner.Input {
	next := res.Next
	in := planner.Input{
		Release: plan.Release{
			Name:      next.Name,
			Namespace: next.Namespace,
			Revision:  next.Version,
			Chart:     next.Chart.Metadata.Name + "-" + next.Chart.Metadata.Version,
			Install:   res.Install,
		},
		NextManifest: next.Manifest,
	}
	if res.Previous != nil {
		in.PreviousManifest = res.Previous.Manifest
		in.Release.CurrentRevision = res.Previous.Version
	}
	for _, h := range next.Hooks {
		events := make([]string, 0, len(h.Events))
		for _, e := range h.Events {
			events = append(events, string(e))
		}
		in.Hooks = append(in.Hooks, plan.Hook{Kind: h.Kind, Name: h.Name, Events: events})
	}
	if crds := res.Chart.CRDObjects(); len(crds) > 0 {
		names := make([]string, 0, len(crds))
		for _, c := range crds {
			names = append(names, c.Filename)
		}
		verb := "are not upgraded or deleted by helm upgrade"
		if res.Install {
			verb = "are created by the install if absent, and never upgraded afterwards"
		}
		in.Notes = append(in.Notes, fmt.Sprintf("CRDs in the chart's crds/ directory (%s) %s", strings.Join(names, ", "), verb))
	}
	return in
}
