package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"helm.sh/helm/v3/pkg/chartutil"
)

// What every verb's command shares: how it runs its Options, what it
// records of its command line, how it checks its arguments. Each verb's
// file keeps its usage, help, flags and Options.

// verbCommand completes cmd (a verb's usage, help and argument check) as
// every verb's command: RunE runs o (runVerb), and cobra prints neither
// the usage nor the error, which exit prints once (exit.go).
func verbCommand(cmd *cobra.Command, o verbOptions, runF runFunc) *cobra.Command {
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.RunE = func(c *cobra.Command, args []string) error {
		return runVerb(c.Context(), o, args, runF)
	}
	return cmd
}

// recordedCommand is verbCommand for a verb that holds the release's Lease
// or writes its record: before it runs, f learns the command line they
// show other users (Factory.Command: the tool's name, then verb — none for
// the root's upgrade — the arguments and the flags given) and how the user
// runs the tool (Factory.Program), which its messages repeat.
func recordedCommand(cmd *cobra.Command, f *Factory, verb string, o verbOptions, runF runFunc) *cobra.Command {
	cmd.PreRun = func(c *cobra.Command, args []string) {
		f.Program = displayName(c.Root())
		f.Command = commandLine(strings.TrimSpace(f.Program+" "+verb), args, c.Flags())
	}
	return verbCommand(cmd, o, runF)
}

// exactArgs accepts n arguments; otherwise the error is format with the
// number given ("gitops expects BASE and HEAD, got %d argument(s)").
func exactArgs(n int, format string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf(format, len(args))
		}
		return nil
	}
}

// releaseArg accepts exactly one argument, a valid Helm release name: what
// a verb that takes RELEASE takes (see route).
func releaseArg(verb string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if err := exactArgs(1, verb+" expects RELEASE, got %d argument(s); see --help")(nil, args); err != nil {
			return err
		}
		if err := chartutil.ValidateReleaseName(args[0]); err != nil {
			return fmt.Errorf("%s %q: %w", verb, args[0], err)
		}
		return nil
	}
}

// revisionNumber reads s as a revision number, as helm reads one: a whole
// number, at least least; otherwise the error is format with s.
func revisionNumber(s string, least int, format string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < least {
		return 0, fmt.Errorf(format, s)
	}
	return n, nil
}
