package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/fatih/color"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// palette holds the colours of one text writer. Each is its own
// color.Color, switched on or off explicitly so that the package-global
// color.NoColor (and whatever else set it) never decides.
type palette struct {
	red, yellow, green, cyan, bold *color.Color
}

func newPalette(enabled bool) palette {
	p := palette{
		red:    color.New(color.FgRed),
		yellow: color.New(color.FgYellow),
		green:  color.New(color.FgGreen),
		cyan:   color.New(color.FgCyan),
		bold:   color.New(color.Bold),
	}
	for _, c := range []*color.Color{p.red, p.yellow, p.green, p.cyan, p.bold} {
		if enabled {
			c.EnableColor()
		} else {
			c.DisableColor()
		}
	}
	return p
}

// rowColor is the colour of a table row: destructive red, rolling yellow,
// create green; nil for the rest.
func (pal palette) rowColor(c *plan.Change) *color.Color {
	switch {
	case c.Destructive:
		return pal.red
	case c.Class == plan.ClassRolling:
		return pal.yellow
	case c.Action == plan.ActionCreate:
		return pal.green
	}
	return nil
}

// paint colours s with c when c is not nil.
func paint(c *color.Color, s string) string {
	if c == nil {
		return s
	}
	return c.Sprint(s)
}

// writeText writes the terminal view: summary, table, hooks, notes, diffs.
func (pw *planWriter) writeText(w io.Writer) error {
	p, pal := pw.plan, newPalette(pw.opts.Color)
	bw := bufio.NewWriter(w)

	fmt.Fprintln(bw, pal.bold.Sprint(SummaryLine(p)))
	if line := destructiveLine(p); line != "" {
		fmt.Fprintln(bw, pal.red.Sprint(line))
	}
	if line := p.StaleConfigLine(); line != "" {
		fmt.Fprintln(bw, pal.yellow.Sprint(line))
	}
	if line := p.RestartLine(); line != "" {
		fmt.Fprintln(bw, line)
	}
	if p.Offline {
		fmt.Fprintln(bw, offlineLine)
	}
	fmt.Fprintln(bw, releaseLine(p))
	if p.ServerVersion != "" {
		fmt.Fprintln(bw, "Kubernetes "+p.ServerVersion)
	}

	changes := shown(p)
	fmt.Fprintln(bw)
	if len(changes) == 0 {
		fmt.Fprintln(bw, "No changes.")
	} else {
		writeTextTable(bw, pal, changes)
	}
	if n := noops(p); n > 0 {
		fmt.Fprintln(bw, plural(n, "object", "objects")+" unchanged, not shown.")
	}
	if line := derivedLine(p); line != "" {
		fmt.Fprintln(bw, line)
	}
	diffed, creates, deletes := pw.opts.diffed(changes)
	if line := wholeObjectsLine(creates, deletes); line != "" {
		fmt.Fprintln(bw, line)
	}

	if len(p.Hooks) > 0 {
		fmt.Fprintln(bw, "\nHooks (Helm creates each anew when its event runs):")
		for _, h := range p.Hooks {
			fmt.Fprintln(bw, "  "+hookText(h))
		}
	}
	if len(p.Blockers) > 0 {
		fmt.Fprintln(bw, "\nBlocked, whatever is acknowledged:")
		for _, b := range p.Blockers {
			fmt.Fprintln(bw, "  - "+b)
		}
	}
	if len(p.Notes) > 0 {
		fmt.Fprintln(bw, "\nNotes:")
		for _, n := range p.Notes {
			fmt.Fprintln(bw, "  - "+n)
		}
	}

	s := diffSides(p)
	diffs, err := diffAll(diffed, pw.opts.Context, s)
	if err != nil {
		return err
	}
	writeTextDiffs(bw, pal, fmt.Sprintf("Diffs (%s -> %s):", s.from, s.to), diffs)
	hdiffs, err := hookDiffs(p.Hooks, pw.opts.Context)
	if err != nil {
		return err
	}
	writeTextDiffs(bw, pal, fmt.Sprintf("Hook diffs (%s -> %s):", hookSides.from, hookSides.to), hdiffs)
	return bw.Flush()
}

// writeTextDiffs writes the non-empty diffs under heading; nothing when all
// are empty.
func writeTextDiffs(w io.Writer, pal palette, heading string, diffs []string) {
	first := true
	for _, d := range diffs {
		if d == "" {
			continue
		}
		if first {
			fmt.Fprintf(w, "\n%s\n", heading)
			first = false
		}
		fmt.Fprintln(w)
		writeTextDiff(w, pal, d)
	}
}

// tableHeader names the padded columns; REASON, the last, is not padded.
var tableHeader = [4]string{"KIND", "NAMESPACE/NAME", "ACTION", "CLASS"}

// writeTextTable writes one row per change, further reasons on continuation
// lines under REASON, then the acknowledgement state, rollout impact, drift
// and notes indented under the row.
func writeTextTable(w io.Writer, pal palette, changes []*plan.Change) {
	rows := make([][4]string, len(changes))
	var width [4]int
	for i := range width {
		width[i] = len(tableHeader[i])
	}
	for i, c := range changes {
		rows[i] = [4]string{c.ID.Kind, objectName(c), string(c.Action), className(c)}
		for j, cell := range rows[i] {
			width[j] = max(width[j], len(cell))
		}
	}
	pad := func(cells [4]string) string {
		var b strings.Builder
		for j, cell := range cells {
			b.WriteString(cell)
			b.WriteString(strings.Repeat(" ", width[j]-len(cell)+2))
		}
		return b.String()
	}
	indent := strings.Repeat(" ", len(pad([4]string{})))

	fmt.Fprintln(w, pal.bold.Sprint(pad(tableHeader)+"REASON"))
	for i, c := range changes {
		rc := pal.rowColor(c)
		first := ""
		if len(c.Reasons) > 0 {
			first = reasonText(c.Reasons[0])
		}
		fmt.Fprintln(w, paint(rc, strings.TrimRight(pad(rows[i])+first, " ")))
		for _, r := range c.Reasons[min(1, len(c.Reasons)):] {
			fmt.Fprintln(w, paint(rc, indent+reasonText(r)))
		}
		if s := ackStatus(c); s != "" {
			ac := pal.red
			if c.Acknowledged && !c.Blocking {
				ac = nil
			}
			fmt.Fprintln(w, paint(ac, "  "+s))
		}
		if c.Rollout != nil {
			fmt.Fprintln(w, "  rollout: "+rolloutText(c.Rollout))
		}
		for _, d := range c.Drift {
			fmt.Fprintln(w, "  drift: "+driftText(d))
		}
		for _, n := range c.Notes {
			fmt.Fprintln(w, "  note: "+n)
		}
		for _, u := range c.Consumers {
			fmt.Fprintln(w, paint(readerColor(pal, u), "  reader: "+u.Text()))
		}
	}
}

// readerColor is the colour of a reader's line: fails red, stale yellow.
func readerColor(pal palette, u plan.Consumer) *color.Color {
	switch u.Sees {
	case plan.SightFails:
		return pal.red
	case plan.SightStale:
		return pal.yellow
	}
	return nil
}

// writeTextDiff writes a unified diff, coloured by line kind.
func writeTextDiff(w io.Writer, pal palette, diff string) {
	lines := strings.SplitAfter(diff, "\n")
	for i, line := range lines {
		if line == "" {
			continue
		}
		text := strings.TrimSuffix(line, "\n")
		var c *color.Color
		switch {
		case i < 2: // the ---/+++ header
			c = pal.bold
		case strings.HasPrefix(text, "@@"):
			c = pal.cyan
		case strings.HasPrefix(text, "-"):
			c = pal.red
		case strings.HasPrefix(text, "+"):
			c = pal.green
		}
		fmt.Fprintln(w, paint(c, text))
	}
}

// plural is "1 object" or "3 objects".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
