package testcluster

import (
	"context"
	"testing"
	"time"
)

// deadlineGrace is how long before the test binary's deadline a command run
// with CommandContext is stopped: enough for the test to report which
// command it was and what it printed.
const deadlineGrace = 30 * time.Second

// CommandContext returns the context for a command a test runs (helm, a
// build, the tool). It has no limit of its own: a fixed one is hit by a
// slower machine (a cold build inside the command), so the only bound is the
// test binary's deadline (go test -timeout), and the context ends a little
// before it so that a command still running then fails its own test, named,
// with its output, instead of the whole binary dying with a stack dump.
func CommandContext(t testing.TB) (context.Context, context.CancelFunc) {
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if deadline, ok := d.Deadline(); ok {
			return context.WithDeadline(context.Background(), deadline.Add(-deadlineGrace))
		}
	}
	return context.WithCancel(context.Background())
}
