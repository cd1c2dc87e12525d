// Package heapprof finds where a run's memory goes: when the environment
// variable Env names a file, Start writes the heap profile of the moment the
// live heap (as of the last GC) peaked, for `go tool pprof -sample_index
// inuse_space BINARY FILE`. Without it, nothing runs. See
// docs/development.md#benchmarks.
package heapprof

import (
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// Env names the profile file; unset or empty: no profiling.
const Env = "SAFE_UPGRADE_HEAPPROFILE"

const liveHeap = "/gc/heap/live:bytes"

// Start starts watching the live heap if Env is set. The returned stop
// writes the last profile and reports the peak on errOut; call it before
// the process exits.
func Start(errOut io.Writer) (stop func()) {
	path := os.Getenv(Env)
	if path == "" {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan uint64)
	go func() {
		sample := []metrics.Sample{{Name: liveHeap}}
		var peak uint64
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				finished <- peak
				return
			case <-tick.C:
			}
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak {
				peak = v
				if err := write(path); err != nil {
					fmt.Fprintf(errOut, "heapprof: %v\n", err)
				}
			}
		}
	}()
	return func() {
		close(done)
		peak := <-finished
		fmt.Fprintf(errOut, "heapprof: peak live heap %.1f MiB, profiled in %s\n", float64(peak)/(1<<20), path)
	}
}

// write replaces path with the current heap profile (live objects as of the
// last GC).
func write(path string) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
