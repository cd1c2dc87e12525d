// Package proc runs commands for tests that run binaries as users do (the
// release archive, the Helm plugin, the helm shim) and keeps how they ended.
package proc

import (
	"bytes"
	"errors"
	"os/exec"
	"strconv"
)

// Result is how one finished command ended.
type Result struct {
	Stdout, Stderr string
	// Code is the exit code.
	Code int
}

// String shows the command's output for failure messages.
func (r Result) String() string {
	return "exit " + strconv.Itoa(r.Code) + "\n--- stdout\n" + r.Stdout + "\n--- stderr\n" + r.Stderr
}

// Run runs x, capturing its stdout and stderr. A non-zero exit is a
// Result; the error is for a command that could not run.
func Run(x *exec.Cmd) (Result, error) {
	var stdout, stderr bytes.Buffer
	x.Stdout, x.Stderr = &stdout, &stderr
	err := x.Run()
	r := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		r.Code, err = exitErr.ExitCode(), nil
	}
	return r, err
}
