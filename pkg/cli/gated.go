package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
)

// What the writing verbs (upgrade, rollback, uninstall) share between
// their plan and their write: the order of report, gate and write, the
// gate's prompt and messages, and the dry-run's exit.

// writeRun is the end of a writing verb's run, once planned and judged by
// the gate: its report, then in a dry-run the plan saved (--plan-out) and
// the dry-run's end, else the gate and the write. A report that carries
// the write's outcome (reportAfter: the JSON document of an applied run)
// is written after the write, or once the run stopped before it.
type writeRun struct {
	report, save, dryRunEnd, gateAndWrite func() error
	dryRun, reportAfter                   bool
}

func (r writeRun) run() error {
	if !r.dryRun && r.reportAfter {
		err := r.gateAndWrite()
		if rerr := r.report(); err == nil {
			err = rerr
		}
		return err
	}
	if err := r.report(); err != nil {
		return err
	}
	if !r.dryRun {
		return r.gateAndWrite()
	}
	if err := r.save(); err != nil {
		return err
	}
	return r.dryRunEnd()
}

// passGate is what a writing verb (upgrade, uninstall) does between its
// report and its first write: ask, on a terminal, for the acknowledgements
// the decision still misses, print the gate's messages, return the blocked
// exit when it does not let the operation through, save the plan (save:
// --plan-out; after the prompt, so the acknowledgements given there are
// kept), and stop if the run was interrupted meanwhile. doing names the
// write in that error.
func passGate(ctx context.Context, streams iostreams.Streams, prompter gate.Prompter, release string, decision gate.Decision, save func() error, doing string) error {
	if len(decision.Unacked) > 0 && len(decision.Refused) == 0 && streams.CanPrompt() {
		ok, err := gate.Confirm(prompter, streams.ErrOut, release, &decision)
		if err != nil {
			return err
		}
		if !ok {
			return withExitCode(ExitBlocked, errors.New("aborted at the prompt; nothing was written"))
		}
	}
	printDecision(streams.ErrOut, decision)
	if decision.Blocked() {
		return withExitCode(ExitBlocked, nil)
	}
	if err := save(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("interrupted before %s; nothing was written: %w", doing, err)
	}
	return nil
}

// dryRunExit ends a dry-run whose plan was reported: it prints the gate's
// messages and returns the blocked exit when the gate would not let the
// operation through, else the pending exit (--detailed-exitcode with
// changes) when pending.
func dryRunExit(w io.Writer, decision gate.Decision, pending bool) error {
	printDecision(w, decision)
	switch {
	case decision.Blocked():
		return withExitCode(ExitBlocked, nil)
	case pending:
		return withExitCode(ExitPending, nil)
	}
	return nil
}

// printDecision prints the gate's messages on w.
func printDecision(w io.Writer, d gate.Decision) {
	for _, msg := range d.Messages() {
		fmt.Fprintln(w, msg)
	}
}
