package cli

import (
	"errors"
	"fmt"
	"io"
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
// prints it, once, to errOut.
func exitCode(err error, errOut io.Writer) int {
	if err == nil {
		return ExitOK
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
