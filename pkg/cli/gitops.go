package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gitops"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/report"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/verb"
)

// GitOpsOptions are `gitops BASE HEAD`: the pre-merge gate of a GitOps
// repository, which plans offline every Flux HelmRelease and Argo CD
// Application that renders differently in the head checkout than in the
// base one.
type GitOpsOptions struct {
	*Factory
	// Render holds the offline target flags (--kube-version,
	// --api-versions), --timeout and --skip-schema-validation.
	Render           render.Options
	Report           report.Request
	Gate             ackFlags
	Rules            planner.UserRules
	DetailedExitcode bool
	// Live plans each HelmRelease against the release helm-controller
	// stored, each Application against its live objects (--live).
	Live bool
	// Helmsman is how the job runs Helmsman (the --helmsman-* flags).
	Helmsman gitops.HelmsmanOptions
	// Helmfile is how the job runs helmfile (the --helmfile* flags).
	Helmfile gitops.HelmfileOptions
	// LookupSecrets are the namespaces whose Secrets the pull request's
	// charts may read through lookup under --live (--lookup-secrets).
	LookupSecrets []string

	// Set by Complete.
	Config  *verb.Config
	Request verb.GitOpsRequest
	AckSet  *gate.Acks
}

// newGitOpsCommand is `gitops BASE HEAD`.
func newGitOpsCommand(f *Factory, runF runFunc) *cobra.Command {
	o := &GitOpsOptions{Factory: f}
	cmd := verbCommand(&cobra.Command{
		Use:   "gitops BASE HEAD",
		Short: "Plan, offline, every Flux HelmRelease and Argo CD Application a pull request changes (BASE and HEAD: the two checkouts, a file or a directory each)",
		Long: `Plan, without any cluster, what merging a GitOps pull request does: every Flux
HelmRelease (helm.toolkit.fluxcd.io) and Helm-source Argo CD Application
(argoproj.io) in BASE and HEAD (a YAML file or a directory searched
recursively, each the checkout of one side) is paired by kind, namespace and
name; each whose chart, version, values, release name or post-renderers
differ is rendered on both sides, as its controller renders it, and planned
as --offline --from-chart plans it. Charts come from the repositories the
objects name (HelmRepository, OCIRepository, GitRepository paths in the
checkout; an Application's repoURL or path), with Helm's credentials.
Helmsman desired state files (TOML or YAML, --helmsman-*) are planned as
what Helmsman does with them (upgrade, install, uninstall, a namespace
move's uninstall and install); a helmfile state is rendered by your own
helmfile (--helmfile, an environment at a time) and each changed release
planned from its render.

Acknowledgements come from --ack, --ack-file, else ` + DefaultAckFile + ` in HEAD
(beside the manifests, reviewed in the same pull request).
With --live, each change is planned against the cluster of the kubeconfig
instead, sending no write but dry-runs: a HelmRelease against the release
helm-controller stored (in its storageNamespace), three-way with the live
objects; an Application against the live objects it tracks (Argo CD stores
no release): three-way with each object's last-applied configuration as
kubectl apply does, Argo CD's server-side apply (ServerSideApply=true) or PUT
(Replace=true) as dry-runs, and the objects the head drops pruned or left as
its syncPolicy says.

Exit codes: 0 nothing changes, 2 blocked by the gate, 3 with --detailed-exitcode
when changes pass, 1 error (a missing valuesFrom ConfigMap, a chart that
cannot be fetched, a malformed object: named with its file and field).`,
		Args: exactArgs(2, "gitops expects BASE and HEAD, got %d argument(s); see --help"),
	}, o, runF)
	fs := cmd.Flags()
	f.AddFlags(fs) // Helm's: --repository-config, --registry-config, --repository-cache, --debug, …
	addReportFlags(fs, &o.Report)
	o.Gate.addFlags(fs)
	fs.BoolVar(&o.DetailedExitcode, "detailed-exitcode", false, "exit 0 when nothing changes, 2 when blocked, 3 when changes pass the gate")
	fs.BoolVar(&o.Live, "live", false, "plan against the cluster of the kubeconfig (sends no write but dry-runs): each changed HelmRelease against the release helm-controller stored, each Application against the live objects it tracks, as Argo CD's sync applies them")
	fs.StringSliceVar(&o.LookupSecrets, "lookup-secrets", nil, "with --live: namespaces whose Secrets the pull request's charts may read through lookup (\"*\" every namespace); by default a lookup of a Secret is answered \"not found\", since a template can print what it reads in forms no mask recognises")
	fs.StringArrayVar(&o.Rules.Ignore, "ignore", nil, "show but do not count changes at a field path: FIELD_PATH, KIND:FIELD_PATH or KIND/NAME:FIELD_PATH (repeatable)")
	fs.StringVar(&o.Rules.File, "rules", "", "rules file (YAML: ignore: [RULE, ...])")
	fs.StringVar(&o.Render.KubeVersion, "kube-version", "", "Kubernetes version used for Capabilities.KubeVersion, the chart's kubeVersion check and the removed-API check (default "+render.DefaultKubeVersion+")")
	fs.StringSliceVarP(&o.Render.APIVersions, "api-versions", "a", []string{}, "Kubernetes api versions used for Capabilities.APIVersions, in addition to the built-in ones the target version serves")
	fs.DurationVar(&o.Render.Timeout, "timeout", render.DefaultTimeout, "time each release's plan may take")
	fs.BoolVar(&o.Render.SkipSchemaValidation, "skip-schema-validation", false, "if set, disables JSON schema validation")
	addHelmsmanFlags(fs, &o.Helmsman)
	addHelmfileFlags(fs, &o.Helmfile)
	return cmd
}

// Complete takes BASE and HEAD, the run's configuration and the
// acknowledgements (the ack file beside the manifests when none is named).
func (o *GitOpsOptions) Complete(args []string) error {
	o.Config = o.RunConfig(o.Render.TimeLimit())
	o.Request = verb.GitOpsRequest{Base: args[0], Head: args[1], Render: o.Render, Rules: o.Rules, Live: o.Live, Helmsman: o.Helmsman, Helmfile: o.Helmfile, LookupSecrets: o.LookupSecrets}
	if o.Gate.File == "" {
		dir := args[1]
		if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
			dir = filepath.Dir(dir)
		}
		if _, err := os.Stat(filepath.Join(dir, DefaultAckFile)); err == nil {
			o.Gate.File = filepath.Join(dir, DefaultAckFile)
		}
	}
	acks, err := o.Gate.collect()
	o.AckSet = acks
	return err
}

// Validate checks the report flags and the target version.
func (o *GitOpsOptions) Validate() error {
	if err := validateReport(o.Report); err != nil {
		return err
	}
	if o.Live && (o.Render.KubeVersion != "" || len(o.Render.APIVersions) > 0) {
		return errors.New("--kube-version and --api-versions describe the target of an offline plan; with --live, the cluster's own are used")
	}
	if len(o.LookupSecrets) > 0 && !o.Live {
		return errors.New("--lookup-secrets needs --live: offline, lookup reads only the base render's objects, never the cluster")
	}
	for _, ns := range o.LookupSecrets {
		if errs := validation.IsDNS1123Label(ns); ns != "*" && len(errs) > 0 {
			return fmt.Errorf("--lookup-secrets %q: not a namespace: %s", ns, strings.Join(errs, "; "))
		}
	}
	_, err := o.Render.OfflineTarget()
	return err
}

// Run plans every change, writes the report and returns the gate's exit.
func (o *GitOpsOptions) Run(ctx context.Context) error {
	plans, err := o.Config.PlanGitOps(ctx, o.Request)
	if err != nil {
		return err
	}
	sections := make([]report.Section, 0, len(plans))
	blocked, changes := false, false
	// An ack names one object of one release: it is unused only when no
	// plan uses it.
	unused, planned := map[string]int{}, 0
	for _, g := range plans {
		// The title, file path and note quote the repository: escaped
		// before they head a report or a stderr line.
		san := o.Config.Sanitizer
		s := report.Section{Title: san.Text(g.Change.Ref.String(), redact.NameLimit), File: san.Text(g.Change.File, redact.MessageLimit), Line: g.Change.Line, Note: san.Text(g.Note, redact.MessageLimit)}
		changes = changes || g.Planned == nil && !g.Unchanged // a removal changes the cluster
		if g.Planned != nil {
			p := g.Planned.Plan
			s.Plan = p
			decision := gate.Evaluate(p, o.AckSet, o.Gate.All)
			planned++
			for _, u := range decision.Unused {
				unused[u]++
			}
			decision.Unused = nil
			if msgs := decision.Messages(); len(msgs) > 0 {
				fmt.Fprintf(o.Streams.ErrOut, "%s:\n", s.Title)
				printDecision(o.Streams.ErrOut, decision)
			}
			blocked = blocked || decision.Blocked()
			changes = changes || p.HasChanges()
		}
		sections = append(sections, s)
	}
	for _, u := range o.AckSet.Strings() {
		if unused[u] == planned && planned > 0 {
			fmt.Fprintf(o.Streams.ErrOut, "warning: acknowledgement %s matches no destructive change\n", u)
			unused[u] = 0 // once, even when given twice
		}
	}
	if err := o.Config.Stage("report", func() error {
		return o.Report.WriteSections(o.Streams.Out, o.Streams.ErrOut, sections, o.Streams.Color(), false)
	}); err != nil {
		return err
	}
	switch {
	case blocked:
		return withExitCode(ExitBlocked, nil)
	case o.DetailedExitcode && changes:
		return withExitCode(ExitPending, nil)
	}
	return nil
}
