package cli

import (
	"fmt"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/shim"
)

// diff serves `helm diff upgrade` (helm-diff's interface, which Helmsman and
// helmfile call for their plan) as the gate's plan: the report on stdout,
// verdicts first, then the diffs. helm-diff's flags are translated
// (shim.DiffArgs) and unknown ones ignored with a warning. Exit codes are
// helm-diff's: 0, or with --detailed-exitcode 2 when anything changes
// (blocked or not: the gate's decision is on stderr); 1 on errors.
func (o *ShimOptions) diff() int {
	inv, err := shim.DiffArgs(o.Args, o.cmdIndex, knownFlag())
	if err != nil {
		return exitCode(err, o.Streams.ErrOut, false)
	}
	for _, w := range inv.Warnings {
		fmt.Fprintf(o.Streams.ErrOut, "helm diff (safe-upgrade shim): %s\n", w)
	}
	streams := o.Streams
	streams.NoColor = streams.NoColor || inv.NoColor
	code := o.gateOptions(streams).execute("helm-safe-upgrade", o.withAckFile(inv), o.Build)
	return diffExitCode(code, inv.DetailedExitcode)
}

// diffExitCode maps the gate's --dry-run exit code to helm-diff's.
func diffExitCode(code int, detailed bool) int {
	switch code {
	case ExitPending:
		return 2
	case ExitBlocked:
		if detailed {
			return 2
		}
		return ExitOK
	}
	return code
}
