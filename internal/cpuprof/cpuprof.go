// Package cpuprof finds where a run's CPU goes: when the environment
// variable Env names a file, Start writes a CPU profile of the whole run to
// it, for `go tool pprof BINARY FILE`. Without it, nothing runs. See
// docs/development.md#benchmarks.
package cpuprof

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// Env names the profile file; unset or empty: no profiling.
const Env = "SAFE_UPGRADE_CPUPROFILE"

// Start starts the CPU profile if Env is set. The returned stop ends it and
// writes the file; call it before the process exits. Errors are reported on
// errOut and never fail the run.
func Start(errOut io.Writer) (stop func()) {
	path := os.Getenv(Env)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(errOut, "cpuprof: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		fmt.Fprintf(errOut, "cpuprof: %s: %v\n", path, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(errOut, "cpuprof: %s: %v\n", path, err)
		}
	}
}
