package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/guard"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/verb"
)

// guardAction is what a guard command does with the cluster's policies.
type guardAction func(ctx context.Context, r guard.Resources) ([]string, error)

// GuardOptions are `guard install|status|uninstall`: the guard in the API
// server (pkg/guard), which refuses every client's unacknowledged delete
// of a release's data.
type GuardOptions struct {
	*Factory
	// Verb is install, status or uninstall.
	Verb string
	// DryRun (install) prints the objects, in Output (yaml, json), and
	// reaches no cluster.
	DryRun  bool
	Output  string
	Timeout time.Duration

	// Set by Complete (not with --dry-run).
	Config *verb.Config
}

const guardLong = `The guard is a ValidatingAdmissionPolicy, a MutatingAdmissionPolicy and
their bindings (admissionregistration.k8s.io/v1; Kubernetes 1.30 or later, the
marker 1.36 or later) that make the API server itself refuse, for every client
(Flux, Argo CD, kubectl, a real helm), the DELETE that destroys a release's
data: a PersistentVolumeClaim of a release (annotation ` + guard.ReleaseAnnotation + `)
or made from a StatefulSet's claim template (the marker labels it
` + guard.GuardedLabel + `), also while its namespace is being deleted; a
PersistentVolume reclaimed Delete that is bound or a release's; a release's
CustomResourceDefinition; a release's StatefulSet (unless the delete orphans
its pods); a Namespace a chart created or labelled ` + guard.ProtectLabel + `=true.
It also refuses the updates that would unguard: a chart or controller setting
` + guard.AckAnnotation + `, removing the release's annotation or the mark, a
volume's reclaim policy changed to Delete. The object's deletion passes once
it carries the annotation ` + guard.AckAnnotation + ` whose value is its own UID,
set by a person; the denial names the one kubectl annotate command. guard
install and guard status say what it protects and what it cannot. Dry-run
requests always pass. See docs/guard.md.`

// newGuardCommand is `guard`: `guard install`, `guard status`, `guard uninstall`.
func newGuardCommand(f *Factory, runF runFunc) *cobra.Command {
	cmd := &cobra.Command{
		Use:           "guard",
		Short:         "The guard in the API server: guard install|status|uninstall",
		Long:          guardLong,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("guard expects a command: guard install, guard status or guard uninstall; see --help")
		},
	}
	for _, v := range []struct{ verb, short string }{
		{"install", "Install the guard (server-side apply), or print it with --dry-run -o yaml for a GitOps repository"},
		{"status", "Say whether the guard is installed and this version's, what it protects, what it cannot, and which claims keep a namespace Terminating"},
		{"uninstall", "Remove exactly the objects guard install made (those carrying its labels)"},
	} {
		cmd.AddCommand(newGuardVerbCommand(f, runF, v.verb, v.short))
	}
	return cmd
}

func newGuardVerbCommand(f *Factory, runF runFunc, verb, short string) *cobra.Command {
	o := &GuardOptions{Factory: f, Verb: verb}
	cmd := verbCommand(&cobra.Command{
		Use:   verb,
		Short: short,
		Long:  short + ".\n\n" + guardLong,
		Args:  cobra.NoArgs,
	}, o, runF)
	f.AddFlags(cmd.Flags())
	cmd.Flags().DurationVar(&o.Timeout, "timeout", render.DefaultTimeout, "time to wait for any individual Kubernetes operation")
	if verb == "install" {
		cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "print the guard's objects (-o yaml or json) and send nothing: commit them to a GitOps repository")
		cmd.Flags().StringVarP(&o.Output, "output", "o", "", "with --dry-run: format of the objects, yaml (the default) or json")
	}
	return cmd
}

// Complete makes the run's configuration, unless it prints only.
func (o *GuardOptions) Complete([]string) error {
	if !o.DryRun {
		o.Config = o.RunConfig(o.Timeout)
	}
	return nil
}

// Validate checks the output format.
func (o *GuardOptions) Validate() error {
	if o.Output != "" && o.Output != "yaml" && o.Output != "json" {
		return fmt.Errorf("--output %q: want yaml or json", o.Output)
	}
	if o.Output != "" && !o.DryRun {
		return errors.New("--output prints the objects: it needs --dry-run")
	}
	return nil
}

// Run prints the objects, or connects and runs the verb.
func (o *GuardOptions) Run(ctx context.Context) error {
	if o.DryRun {
		return o.print()
	}
	if err := o.Config.Connect(ctx); err != nil {
		return err
	}
	var act guardAction
	switch o.Verb {
	case "install":
		act = o.withCoverage(guard.Install, true)
	case "uninstall":
		act = func(ctx context.Context, r guard.Resources) ([]string, error) {
			lines, err := guard.Uninstall(ctx, r)
			if err == nil && len(lines) == 0 {
				lines = []string{"the guard is not installed: nothing to remove"}
			}
			return lines, err
		}
	default:
		act = o.withCoverage(func(ctx context.Context, r guard.Resources) ([]string, error) {
			lines, _, err := guard.Status(ctx, r)
			return lines, err
		}, false)
	}
	lines, err := act(ctx, o.Config.Cluster)
	for _, l := range lines {
		fmt.Fprintln(o.Streams.Out, l)
	}
	if err != nil {
		return fmt.Errorf("guard %s: %w", o.Verb, err)
	}
	return nil
}

// withCoverage runs act, then says what the guard protects and what it
// cannot (guard.Survey; with mark, it labels the claims of claim templates
// made before the guard). A survey that cannot be read is said, not an
// error: the guard itself was installed or read.
func (o *GuardOptions) withCoverage(act guardAction, mark bool) guardAction {
	return func(ctx context.Context, r guard.Resources) ([]string, error) {
		lines, err := act(ctx, r)
		if err != nil {
			return lines, err
		}
		cov, err := guard.Survey(ctx, r, claimNaming(), mark)
		if err != nil {
			return append(lines, o.Config.Sanitizer.Text("what the guard protects could not be read: "+err.Error(), redact.MessageLimit)), nil
		}
		// A line may quote the API server (why a claim could not be
		// labelled): text from elsewhere, printed through the one printer.
		for _, l := range cov.Lines() {
			lines = append(lines, o.Config.Sanitizer.Text(l, redact.MessageLimit))
		}
		return lines, nil
	}
}

// claimNaming is the StatefulSet controller's claim-naming rule, for
// guard's survey.
func claimNaming() guard.ClaimNaming {
	return guard.ClaimNaming{Templates: live.ClaimTemplates, FromTemplate: live.ClaimTemplate}
}

// print writes the guard's objects: a YAML stream, or a JSON List.
func (o *GuardOptions) print() error {
	objs, err := guard.Objects()
	if err != nil {
		return err
	}
	if o.Output == "json" {
		items := make([]any, len(objs))
		for i, obj := range objs {
			items[i] = obj.Object
		}
		b, err := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(o.Streams.Out, "%s\n", b)
		return err
	}
	for _, obj := range objs {
		b, err := yaml.Marshal(obj.Object)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(o.Streams.Out, "---\n%s", b); err != nil {
			return err
		}
	}
	return nil
}
