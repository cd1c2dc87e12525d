package watch

import (
	"context"
	"strings"
	"time"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
)

const (
	// logLines is how many lines of a crashed container's log are shown.
	logLines = 3
	// logWait bounds the one GET of a log: the kubelet (kwok here) answers
	// it, not the API server, and the run must not hang on it.
	logWait = 10 * time.Second
)

// lastLogLines is the end of the log of c's run that failed, its lines
// joined by " | ", "" when it cannot be read (no REST client, no kubelet
// serving logs, the log is gone). One GET of pods/log.
// The caller sanitises it like every other message.
func lastLogLines(ctx context.Context, r live.Reader, c *container) string {
	ctx, cancel := context.WithTimeout(ctx, logWait)
	defer cancel()
	raw, err := r.PodLog(ctx, c.namespace, c.pod, c.name, c.previous, logLines)
	if err != nil {
		return ""
	}
	return tailLines(raw, logLines)
}

// tailLines is the last n non-empty lines of log, joined by " | ". Lines
// are not cut: a Secret value cut in two would no longer be recognised and
// masked.
func tailLines(log string, n int) string {
	var lines []string
	for _, l := range strings.Split(log, "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		lines = append(lines, l)
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
