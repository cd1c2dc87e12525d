package watch

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// Line is one object's progress: its ID (Kind/namespace/name) and state.
type Line struct {
	ID   string
	Text string
}

// Progress shows the watch's progress.
type Progress interface {
	// Update shows every object's line, elapsed since the watch started.
	Update(lines []Line, elapsed time.Duration)
	// Done ends the display.
	Done()
}

// NewProgress shows progress on w: on a terminal one line per object,
// redrawn in place; otherwise a plain line each time an object's state
// changes (CI logs). A line's text holds what the cluster says (pod
// status, images, events, logs): it is printed through san.Text, Secret
// values masked and escape sequences escaped, so that it can neither show
// a Secret nor act on the terminal, and each line stays one line.
func NewProgress(w io.Writer, tty bool, san *redact.Sanitizer) Progress {
	if tty {
		return &liveLines{w: w, san: san}
	}
	return &changeLines{w: w, san: san, last: map[string]string{}}
}

// changeLines prints an object's line when it changed.
type changeLines struct {
	w    io.Writer
	san  *redact.Sanitizer
	last map[string]string
}

func (p *changeLines) Update(lines []Line, elapsed time.Duration) {
	for _, l := range lines {
		if p.last[l.ID] == l.Text {
			continue
		}
		p.last[l.ID] = l.Text
		fmt.Fprintf(p.w, "%s: %s (%s)\n", p.san.Text(l.ID, redact.NameLimit), p.san.Text(l.Text, redact.MessageLimit), elapsed.Round(time.Second))
	}
}

func (p *changeLines) Done() {}

// liveLines redraws one line per object in place (cursor up, clear line).
type liveLines struct {
	w     io.Writer
	san   *redact.Sanitizer
	drawn int
}

func (p *liveLines) Update(lines []Line, elapsed time.Duration) {
	var b strings.Builder
	if p.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", p.drawn)
	}
	for _, l := range lines {
		fmt.Fprintf(&b, "\r\x1b[2K  %s: %s (%s)\n", p.san.Text(l.ID, redact.NameLimit), p.san.Text(l.Text, redact.MessageLimit), elapsed.Round(time.Second))
	}
	p.drawn = len(lines)
	io.WriteString(p.w, b.String())
}

func (p *liveLines) Done() {}
