// Package cli is the command layer: it owns every flag (registration,
// parsing, checks: upgradeflags.go for the upgrade command), parses them
// into Options and runs Complete → Validate → Run, Complete building the
// plain requests the actions of pkg/upgrade only read. It holds no logic
// of its own beyond the flags and wiring the stages together.
package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/helmsdk"
	"github.com/safe-upgrade/helm-safe-upgrade/internal/panics"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/shim"
)

// BuildInfo identifies the binary.
type BuildInfo struct {
	Version string
	Commit  string
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

Exit codes:
  0  success (applied and rolled out; or with --dry-run: the gate lets the upgrade through)
  1  error (bad input, unreachable cluster, failed upgrade, failed rollout)
  2  blocked: destructive changes are not acknowledged; nothing was written
  3  with --dry-run --detailed-exitcode: changes pending that the gate lets through
     (and 0 means no changes at all; updates of fields regenerated on every
     render count only with --fail-on-regenerated)
`

// newRootCommand builds the command for the given invocation name over o.
func newRootCommand(argv0 string, o *UpgradeOptions, build BuildInfo) *cobra.Command {
	name := commandName(argv0)
	o.UserAgent = "helm-safe-upgrade/" + build.Version
	cmd := &cobra.Command{
		Use: "safe-upgrade RELEASE CHART [flags]",
		// Usage and help read "helm safe-upgrade" or "kubectl safe-upgrade".
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: name},
		Short:       "Plan, review and apply a Helm upgrade without surprises",
		Long:        fmt.Sprintf(longHelp, name),
		Example: fmt.Sprintf(`  # Show what the upgrade would do, without writing anything
  %[1]s my-db bitnami/postgresql --version 16.0.0 -f values.yaml --dry-run

  # Apply, acknowledging one destructive change reviewed in the plan
  %[1]s my-db bitnami/postgresql -f values.yaml --ack StatefulSet/my-db/my-db-postgresql@3f2a9c1e0b7d`, name),
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
			o.Command = commandLine(name, args, cmd.Flags())
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.SetIn(o.Streams.In)
	cmd.SetOut(o.Streams.Out)
	cmd.SetErr(o.Streams.ErrOut)
	o.AddFlags(cmd)
	cmd.AddCommand(newShowPlanCommand(o.Streams))
	// A release may be named "completion": only show-plan is a subcommand.
	cmd.CompletionOptions.DisableDefaultCmd = true
	return cmd
}

// commandLine is the command as run, with the flags given but none of
// their values (a --set value can be a password): what the release's Lease
// shows other users.
func commandLine(name string, args []string, fs *pflag.FlagSet) string {
	parts := append([]string{name}, args...)
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
// binary is the drop-in helm (ShimOptions); `shim install DIR` installs it.
func ExecuteWithMasker(argv0 string, args []string, streams iostreams.Streams, build BuildInfo, masker *redact.Masker) int {
	if shim.IsShim(argv0) {
		o := NewShimOptions(streams, build, argv0, args)
		o.Masker = masker
		return ExecuteShim(o)
	}
	if len(args) >= 2 && args[0] == "shim" && args[1] == "install" {
		return executeShimInstall(args[2:], streams)
	}
	o := NewUpgradeOptions(streams)
	o.Masker = masker
	return o.execute(argv0, args, build)
}

// execute runs the command with args over o and returns the exit code.
// Any panic ends in exit 1 with a one-line error (the stack only with
// --debug or HELM_DEBUG): exit 2 means "blocked by the gate" and nothing
// else.
func (o *UpgradeOptions) execute(argv0 string, args []string, build BuildInfo) (code int) {
	streams := o.Streams
	defer func() {
		if r := recover(); r != nil {
			code = o.exit(panics.New(r))
		}
	}()
	// --version is also helm upgrade's chart-version flag (--version 1.2.3);
	// alone, it asks for the tool's version.
	if len(args) == 1 && args[0] == "--version" {
		fmt.Fprint(streams.Out, versionLine(argv0, build))
		return ExitOK
	}
	cmd := newRootCommand(argv0, o, build)
	cmd.SetArgs(args)
	// Flag errors are bad input: exit 1 with the message, as for any error.
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	// Ctrl-C cancels the run; before the apply starts nothing is written.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return o.exit(cmd.ExecuteContext(ctx))
}
