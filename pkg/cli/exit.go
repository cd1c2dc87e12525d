package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/panics"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// Exit codes, the contract CI relies on (see the command's long help).
const (
	ExitOK      = 0
	ExitError   = 1
	ExitBlocked = 2
	ExitPending = 3 // --dry-run --detailed-exitcode: changes the gate lets through
)

// exitError carries a specific exit code up to Execute, the one place that
// turns errors into codes. A nil Err exits silently with Code.
type exitError struct {
	Code int
	Err  error
}

func (e *exitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *exitError) Unwrap() error { return e.Err }

// withExitCode wraps err (which may be nil) so Execute exits with code.
func withExitCode(code int, err error) error { return &exitError{Code: code, Err: err} }

// exit is the run's exit code for err, which it prints to stderr without the
// release's Secret values (once the run has a configuration: before, it
// knows none), whichever verb ran. A panic, recovered in the command's goroutine or in one of
// the tool's, is exit 1 with a one-line error, its stack only with --debug
// or HELM_DEBUG: Go's own exit code for a panic, 2, is the gate's "blocked".
func (f *Factory) exit(err error) int {
	if err != nil && f.config != nil {
		err = f.config.Sanitize(err)
	}
	if _, ok := panics.StackOf(err); ok && !f.Settings.Debug {
		fmt.Fprintf(f.Streams.ErrOut, "Error: %s (a bug: run with --debug for the stack)\n", errorText(err))
		return ExitError
	}
	return exitCode(err, f.Streams.ErrOut, f.Settings.Debug)
}

// exitCode maps an error from the command to the process exit code and
// prints it, once, to errOut. A recovered panic (panics.New) is an
// error like any other: exit 1, one line, and its stack only when debug is
// set.
func exitCode(err error, errOut io.Writer, debug bool) int {
	if err == nil {
		return ExitOK
	}
	if stack, ok := panics.StackOf(err); debug && ok {
		defer fmt.Fprintf(errOut, "%s\n", stack)
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			// err, not ee.Err: what wraps ee may be its sanitised text.
			fmt.Fprintf(errOut, "Error: %s\n", errorText(err))
		}
		return ee.Code
	}
	fmt.Fprintf(errOut, "Error: %s\n", errorText(err))
	return ExitError
}

// errorText is err's message as the Error: line prints it: it holds what
// the API server, Helm or a Lease said, so it goes through the printer of
// text from elsewhere (escaped and bounded; the release's Secret values
// were masked by UpgradeOptions.exit, which knows them), one line.
func errorText(err error) string {
	var escapeOnly *redact.Sanitizer
	return escapeOnly.Text(err.Error(), redact.RecordLimit)
}
