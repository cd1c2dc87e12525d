package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

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

// ExitError carries a specific exit code up to Execute, the one place that
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

// exitCode maps an error from the command to the process exit code and
// prints it, once, to errOut. A recovered panic (*panics.Error) is an error
// like any other: exit 1, one line, and its stack only when debug is set.
func exitCode(err error, errOut io.Writer, debug bool) int {
	if err == nil {
		return ExitOK
	}
	var pe *panics.Error
	if debug && errors.As(err, &pe) {
		defer fmt.Fprintf(errOut, "%s\n", pe.Stack)
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			// err, not ee.Err: what wraps ee may be its sanitised text.
			fmt.Fprintf(errOut, "Error: %v\n", err)
		}
		return ee.Code
	}
	fmt.Fprintf(errOut, "Error: %v\n", err)
	return ExitError
}

// debugRequested reports whether the run asked for debug output: --debug
// among args (as Helm's own flag parses it) or HELM_DEBUG set true.
func debugRequested(args []string) bool {
	if on, err := strconv.ParseBool(os.Getenv("HELM_DEBUG")); err == nil && on {
		return true
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--debug="); ok {
			on, _ := strconv.ParseBool(v)
			return on
		}
		if a == "--debug" {
			return true
		}
	}
	return false
}

// recovered turns a panic of the command's goroutine into exit 1 with a
// one-line error, sanitised like any other (the stack only when debug is
// set): Go's own exit code for a panic, 2, is the gate's "blocked".
func recovered(r interface{}, errOut io.Writer, debug bool, san *redact.Sanitizer) int {
	pe := panics.New(r)
	if debug {
		fmt.Fprintf(errOut, "Error: %s\n%s\n", san.String(pe.Error()), san.String(string(pe.Stack)))
	} else {
		fmt.Fprintf(errOut, "Error: %s (a bug: run with --debug for the stack)\n", san.String(pe.Error()))
	}
	return ExitError
}
