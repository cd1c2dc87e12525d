// Package cli is the command layer: a command tree in the kubectl and GitHub
// CLI manner, one file per verb (upgrade.go, recover.go, uninstall.go, showplan.go,
// shim_install.go; the drop-in helm in shim.go), each with Options whose
// Complete → Validate → Run turn the flags into the plain requests the
// actions of pkg/verb only read. What the verbs share (Helm's settings,
// the run's configuration, the exit code) is the Factory; how a verb's
// command runs its Options is command.go's, and the writing verbs' order
// of report, gate and write is gated.go's. It owns every
// flag (the upgrade's in upgradeflags.go) and holds no logic of its own
// beyond the flags and wiring the stages together.
package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/helmsdk"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/shim"
)

// BuildInfo identifies the binary.
type BuildInfo struct {
	Version string
	Commit  string
}

// runFunc is the flag-parsing tests' seam (the GitHub CLI's runF): when
// set, a verb hands its options to it once complete, instead of checking
// and running them.
type runFunc func(opts any) error

// verbOptions are a verb's Options: Complete takes the arguments and
// builds what Run needs, Validate checks the flags, Run runs.
type verbOptions interface {
	Complete(args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// runVerb is every verb's RunE: Complete → Validate → Run over o; with
// runF (tests) the completed options go to it instead of Validate and Run.
func runVerb(ctx context.Context, o verbOptions, args []string, runF runFunc) error {
	if err := o.Complete(args); err != nil {
		return err
	}
	if runF != nil {
		return runF(o)
	}
	if err := o.Validate(); err != nil {
		return err
	}
	return o.Run(ctx)
}

// verbs are the commands of the tree besides the root's RELEASE CHART. A
// new verb is a file with its Options and newXCommand, and a line here;
// the reading rule (route.go) then applies to it unchanged.
func verbs() []func(*Factory, runFunc) *cobra.Command {
	return []func(*Factory, runFunc) *cobra.Command{
		newUpgradeCommand,
		newRecoverCommand,
		newRollbackCommand,
		newUninstallCommand,
		newStatusCommand,
		newShowPlanCommand,
		newShimCommand,
		newGuardCommand,
		newGitOpsCommand,
		newLogCommand,
		newDiffCommand,
	}
}

// commandName returns how users invoke this binary: as a krew-installed
// kubectl plugin (kubectl-safe_upgrade) or as a Helm plugin.
func commandName(argv0 string) string {
	base := strings.TrimSuffix(filepath.Base(argv0), ".exe")
	if strings.HasPrefix(base, "kubectl-") {
		return "kubectl safe-upgrade"
	}
	return "helm safe-upgrade"
}

// displayName is how usage and help name the root command.
func displayName(root *cobra.Command) string {
	return root.Annotations[cobra.CommandDisplayNameAnnotation]
}

const longHelp = `Plan, review and apply a Helm upgrade without surprises.

%[1]s renders the new release exactly as "helm upgrade" would, compares it
with the last release and the live objects, and classifies every object:
create, delete, no-op, in-place, rolling (pods replaced) or recreate-required
(an immutable field changes). Destructive changes block the upgrade until they
are acknowledged (--ack, --ack-file, or by typing the release name at the
prompt). What is applied is exactly the render that was reviewed; then the
rollout is watched until every changed object is ready or has failed, and
the plan's prediction is checked against the pods and claims seen
(--no-watch skips it).

How a command line is read (no release name is ever out of reach):
  upgrade RELEASE CHART   always an upgrade, whatever RELEASE is called
  RELEASE CHART           an upgrade, when RELEASE is not a command's name
  COMMAND ...             a command below (the first argument, flags aside)
  COMMAND CHART           an upgrade of the release named COMMAND, when CHART
                          is not what COMMAND takes: a command that takes
                          RELEASE takes a Helm release name (lower-case
                          letters, digits, '-' and '.'), so "recover ./chart"
                          upgrades the release "recover" (and "rollback
                          ./chart", "uninstall ./chart", "status ./chart",
                          "log ./chart", "diff ./chart" the release of that
                          name); shim takes install; guard takes install,
                          status or uninstall; gitops takes BASE and HEAD;
                          show-plan takes any FILE

Exit codes:
  0  success (applied and rolled out; or with --dry-run: the gate lets the upgrade through)
  1  error (bad input, unreachable cluster, failed upgrade, failed rollout)
  2  blocked: destructive changes are not acknowledged (or --fail-on-stale-config
     found running pods that would not see a changed ConfigMap or Secret);
     nothing was written
  3  with --dry-run --detailed-exitcode: changes pending that the gate lets through
     (and 0 means no changes at all; updates of fields regenerated on every
     render count only with --fail-on-regenerated)
`

// newRootCommand builds the tree for the given invocation name: the root is
// the upgrade of RELEASE CHART (as before there were verbs), with the verbs
// below it. runF is nil but in tests.
func newRootCommand(argv0 string, f *Factory, runF runFunc) *cobra.Command {
	name := commandName(argv0)
	cmd := upgradeCommand(newUpgradeOptions(f), "safe-upgrade RELEASE CHART [flags]", runF)
	// Usage and help read "helm safe-upgrade" or "kubectl safe-upgrade".
	cmd.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: name}
	cmd.Short = "Plan, review and apply a Helm upgrade without surprises"
	cmd.Long = fmt.Sprintf(longHelp, name)
	cmd.Example = fmt.Sprintf(`  # Show what the upgrade would do, without writing anything
  %[1]s my-db bitnami/postgresql --version 16.0.0 -f values.yaml --dry-run

  # Apply, acknowledging one destructive change reviewed in the plan
  %[1]s my-db bitnami/postgresql -f values.yaml --ack StatefulSet/my-db/my-db-postgresql@3f2a9c1e0b7d

  # A release named like a command
  %[1]s upgrade recover ./chart --dry-run`, name)
	for _, newVerb := range verbs() {
		cmd.AddCommand(newVerb(f, runF))
	}
	// A release may be named "completion": no completion command.
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.InitDefaultHelpCmd()
	for _, c := range cmd.Commands() {
		if c.Name() == "help" {
			c.Args = helpArgs
		}
	}
	return cmd
}

// helpArgs accepts what help can show: nothing (the root) or a command's
// path (recover, shim install); anything else is no help topic, so that
// "help ./chart" is read as the upgrade of the release "help".
func helpArgs(cmd *cobra.Command, args []string) error {
	cur := cmd.Root()
	for _, a := range args {
		next := subcommand(cur, a)
		if next == nil {
			return fmt.Errorf("help: no command %q", a)
		}
		cur = next
	}
	return nil
}

// subcommand is c's subcommand named (or aliased) name, or nil.
func subcommand(c *cobra.Command, name string) *cobra.Command {
	for _, sub := range c.Commands() {
		if sub.Name() == name || sub.HasAlias(name) {
			return sub
		}
	}
	return nil
}

// commandLine is the command as run, with the flags given but none of
// their values (a --set value can be a password) and no password of a URL
// argument (a CHART of https://USER:PASSWORD@…): what the release's Lease
// shows other users.
func commandLine(name string, args []string, fs *pflag.FlagSet) string {
	parts := []string{name}
	for _, a := range args {
		parts = append(parts, redact.RedactURL(a))
	}
	fs.Visit(func(f *pflag.Flag) { parts = append(parts, "--"+f.Name) })
	return strings.Join(parts, " ")
}

// versionLine is what --version prints.
func versionLine(argv0 string, build BuildInfo) string {
	return fmt.Sprintf("%s %s (commit %s, helm SDK %s)\n", commandName(argv0), build.Version, build.Commit, helmsdk.Version())
}

// Execute runs the command with args and returns the process exit code.
// Secret values are masked with a key made for this run, which lives only
// in the process.
func Execute(argv0 string, args []string, streams iostreams.Streams, build BuildInfo) int {
	return ExecuteWithMasker(argv0, args, streams, build, nil)
}

// ExecuteWithMasker is Execute masking Secret values with masker: tests use
// it to tell which value a marker stands for. Invoked as helm (argv0), the
// binary is the drop-in helm (ShimOptions).
func ExecuteWithMasker(argv0 string, args []string, streams iostreams.Streams, build BuildInfo, masker *redact.Masker) int {
	if shim.IsShim(argv0) {
		o := NewShimOptions(streams, build, argv0, args)
		o.Masker = masker
		return ExecuteShim(o)
	}
	f := NewFactory(streams)
	f.Masker = masker
	return f.executeTree(argv0, args, build, nil)
}

// executeTree runs the command tree with args, read by the rule (route),
// and returns the exit code.
func (f *Factory) executeTree(argv0 string, args []string, build BuildInfo, runF runFunc) int {
	f.UserAgent = "helm-safe-upgrade/" + build.Version
	root := newRootCommand(argv0, f, runF)
	return f.execute(argv0, root, route(root, args), build)
}

// executeVerb runs the one command newCmd makes with args, without the
// tree and its reading rule: the drop-in helm's rollback and uninstall,
// whose command the shim has already told apart (helm un NAME is never an
// upgrade of the release "un").
func (f *Factory) executeVerb(argv0 string, newCmd func(*Factory, runFunc) *cobra.Command, args []string, build BuildInfo) int {
	f.UserAgent = "helm-safe-upgrade/" + build.Version
	cmd := newCmd(f, nil)
	cmd.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: commandName(argv0)}
	return f.execute(argv0, cmd, args, build)
}

// execute runs one upgrade with args over o, without the tree: the drop-in
// helm's gate, whose arguments are always helm upgrade's RELEASE CHART.
func (o *UpgradeOptions) execute(argv0 string, args []string, build BuildInfo) int {
	o.UserAgent = "helm-safe-upgrade/" + build.Version
	cmd := upgradeCommand(o, "safe-upgrade RELEASE CHART [flags]", nil)
	cmd.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: commandName(argv0)}
	return o.Factory.execute(argv0, cmd, args, build)
}
