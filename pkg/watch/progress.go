package watch

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// Line is one object's progress: its ID (Kind/namespace/name), state
// (plan.StateInProgress, ...) and text (the state with its detail and
// reason).
type Line struct {
	ID    string
	State string
	Text  string
}

// Progress shows the watch's progress.
type Progress interface {
	// Update shows every object's line, elapsed since the watch started.
	Update(lines []Line, elapsed time.Duration)
	// Done ends the display.
	Done()
}

// Heartbeat is how often, off a terminal, one line says which objects the
// watch still awaits: a CI log that shows nothing for minutes reads as a
// hung job.
const Heartbeat = 10 * time.Second

// Size reports a terminal's columns and rows now (0 when unknown): read on
// every redraw, so a resized terminal is followed without SIGWINCH.
type Size func() (cols, rows int)

// NewProgress shows progress on w: on a terminal (tty) one line per object,
// redrawn in place at 80 columns (see NewTerminalProgress, which knows the
// terminal's size); otherwise a plain line each time an object's state
// changes, and a heartbeat (CI logs). A line's text holds what the cluster
// says (pod status, images, events, logs): it is printed through san.Text,
// Secret values masked and escape sequences escaped, so that it can neither
// show a Secret nor act on the terminal, and each line stays one line.
func NewProgress(w io.Writer, tty bool, san *redact.Sanitizer) Progress {
	if tty {
		return NewTerminalProgress(w, nil, san)
	}
	return &changeLines{w: w, san: san, last: map[string]string{}, every: Heartbeat}
}

// NewTerminalProgress redraws one line per object in place on w, a
// terminal that can move its cursor, of the size size reports (nil or 0:
// 80 columns): each line is cut to the width with an ellipsis (the
// outcome printed after the watch has the whole text), so that a redraw
// never leaves a copy of a wrapped line behind.
func NewTerminalProgress(w io.Writer, size Size, san *redact.Sanitizer) Progress {
	if size == nil {
		size = func() (int, int) { return 0, 0 }
	}
	// Ambiguous-width runes (—, …) one column, as outside East Asian
	// locales, whatever this process's locale says.
	return &liveLines{w: w, san: san, size: size, width: &runewidth.Condition{StrictEmojiNeutral: true}}
}

// changeLines prints an object's line when it changed, and every `every`
// which objects are still awaited.
type changeLines struct {
	w     io.Writer
	san   *redact.Sanitizer
	last  map[string]string
	every time.Duration
	// beats is how many heartbeats are due by now, shown or not.
	beats int64
}

func (p *changeLines) Update(lines []Line, elapsed time.Duration) {
	for _, l := range lines {
		if p.last[l.ID] == l.Text {
			continue
		}
		p.last[l.ID] = l.Text
		fmt.Fprintf(p.w, "%s: %s (%s)\n", p.san.Text(l.ID, redact.NameLimit), p.san.Text(l.Text, redact.MessageLimit), elapsed.Round(time.Second))
	}
	if p.every <= 0 {
		return
	}
	// At a steady interval from the start, whatever was printed between.
	beats := int64(elapsed / p.every)
	if beats <= p.beats {
		return
	}
	p.beats = beats
	if awaited := awaitedIDs(lines); len(awaited) > 0 {
		text := fmt.Sprintf("still waiting for %d of %d: %s", len(awaited), len(lines), strings.Join(awaited, ", "))
		fmt.Fprintf(p.w, "%s (%s)\n", p.san.Text(text, redact.MessageLimit), elapsed.Round(time.Second))
	}
}

// awaitedIDs are the IDs of the lines still in progress.
func awaitedIDs(lines []Line) []string {
	var out []string
	for _, l := range lines {
		if l.State == plan.StateInProgress {
			out = append(out, l.ID)
		}
	}
	return out
}

func (p *changeLines) Done() {}

// liveLines redraws one line per object in place: back to the block's
// first row, erase to the end of the screen, draw.
type liveLines struct {
	w     io.Writer
	san   *redact.Sanitizer
	size  Size
	width *runewidth.Condition
	// drawn are the display widths of the rows last drawn.
	drawn []int
}

// fallbackCols is the width assumed when the terminal does not say.
const fallbackCols = 80

func (p *liveLines) Update(lines []Line, elapsed time.Duration) {
	cols, rows := p.size()
	if cols <= 0 {
		cols = fallbackCols
	}
	var b strings.Builder
	// Autowrap off while drawing: a line the terminal draws only after it
	// was narrowed (output it had yet to draw when resized) stays one row,
	// cut by the terminal, as the next redraw counts it; wrapped, its
	// rows beyond the count would stay behind as a copy.
	b.WriteString(autowrapOff)
	b.WriteByte('\r')
	if up := p.rowsDrawn(cols); up > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", up)
	}
	b.WriteString("\x1b[J")
	texts := make([]string, 0, len(lines))
	for _, l := range lines {
		texts = append(texts, fmt.Sprintf("  %s: %s (%s)", p.san.Text(l.ID, redact.NameLimit), p.san.Text(l.Text, redact.MessageLimit), elapsed.Round(time.Second)))
	}
	// A block taller than the screen scrolls its first rows out of reach
	// of the cursor: they would stay behind as copies.
	if rows > 1 && len(texts) > rows-1 {
		more := len(texts) - (rows - 2)
		texts = append(texts[:rows-2], fmt.Sprintf("  … and %d more", more))
	}
	p.drawn = p.drawn[:0]
	for _, t := range texts {
		// The last column left free: a terminal that wraps on it would
		// move the cursor to a row of its own.
		t = fitWidth(p.width, t, cols-1)
		b.WriteString(t)
		b.WriteByte('\n')
		p.drawn = append(p.drawn, p.width.StringWidth(t))
	}
	b.WriteString(autowrapOn)
	_, _ = io.WriteString(p.w, b.String())
}

// DECAWM, reset and set (autowrap is on by default in every terminal).
const (
	autowrapOff = "\x1b[?7l"
	autowrapOn  = "\x1b[?7h"
)

// rowsDrawn is how many rows the lines last drawn take now, at cols
// columns: one each when drawn, whatever the terminal's width then
// (autowrap off); more once the terminal is narrower and wraps them again
// (tmux, VTE, Windows Terminal, iTerm2 do). A terminal that cuts them
// instead (xterm), or that drew them only once narrowed, loses as many
// rows above the block as it is moved up too far: never a copy left
// behind.
func (p *liveLines) rowsDrawn(cols int) int {
	n := 0
	for _, w := range p.drawn {
		n += max(1, (w+cols-1)/cols)
	}
	return n
}

func (p *liveLines) Done() {}

// fitWidth is s cut to width display columns (East Asian wide runes take
// two), ending in an ellipsis when cut; tabs become spaces, since their
// width depends on the column.
func fitWidth(cond *runewidth.Condition, s string, width int) string {
	s = strings.ReplaceAll(s, "\t", " ")
	if width < 1 {
		width = 1
	}
	if cond.StringWidth(s) <= width {
		return s
	}
	return cond.Truncate(s, width, "…")
}
