package watch

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/termtest"
)

// watchScript is a rollout as the watch shows it, second by second: a
// StatefulSet whose pod cannot be scheduled (a line far wider than 80
// columns, and wider than 200), a Deployment rolling (its line the same
// for seconds but the clock), a ConfigMap line in East Asian wide
// characters, and the end.
func watchScript() [][]Line {
	db := Line{ID: "StatefulSet.apps/demo/demo-db", State: plan.StateInProgress,
		Text: "in-progress: 0/1 updated, 0/1 ready — pod demo-db-0 cannot be scheduled (Unschedulable): 0/3 nodes are available: " +
			"1 node(s) didn't match Pod's node affinity/selector, 2 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, " +
			"3 node(s) had volume node affinity conflict."}
	cm := Line{ID: "ConfigMap/demo/設定-名前", State: plan.StateInProgress, Text: "in-progress — 設定はまだ読み込まれていません、もう少し待ってください、まだです"}
	var steps [][]Line
	for i := 0; i < 24; i++ {
		web := Line{ID: "Deployment.apps/demo/demo-web", State: plan.StateInProgress, Text: "in-progress: 1/2 updated, 2 ready, 1 old pending termination"}
		if i >= 12 {
			web = Line{ID: web.ID, State: plan.StateCurrent, Text: "current: 2/2 updated, 2/2 ready"}
		}
		if i >= 22 {
			db = Line{ID: db.ID, State: plan.StateCurrent, Text: "current: 1/1 updated, 1/1 ready"}
			cm = Line{ID: cm.ID, State: plan.StateCurrent, Text: "current"}
		}
		steps = append(steps, []Line{db, web, cm})
	}
	return steps
}

// TestTerminalProgress drives the watch's progress through a
// pseudo-terminal of 80 and of 200 columns, resized mid-watch or not,
// into a terminal emulator, and checks what a person sees at the end: one
// line per object on the screen under the line printed before the watch,
// none repeated there or in the scrollback, each cut to the width.
func TestTerminalProgress(t *testing.T) {
	for _, tt := range []struct {
		name         string
		cols, resize int
		// late is how many redraws, written at the old size, the
		// terminal draws only after it resized (a busy terminal).
		late int
	}{
		{"80 columns", 80, 0, 0},
		{"200 columns", 200, 0, 0},
		{"80 columns widened to 200", 80, 200, 0},
		{"200 columns narrowed to 80", 200, 80, 0},
		{"120 columns narrowed to 50", 120, 50, 0},
		{"80 columns widened to 200, two redraws late", 80, 200, 2},
		{"200 columns narrowed to 80, two redraws late", 200, 80, 2},
		{"120 columns narrowed to 50, three redraws late", 120, 50, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const rows = 12
			tm := termtest.Open(t, tt.cols, rows)
			out := tm.Writer()
			// The size as the command reads it: from the terminal itself.
			size := tm.Size
			fmt.Fprintln(out, "Watching the rollout (up to 5m0s)…")
			// Lines that scroll the screen, so that a copy left behind
			// would reach the scrollback.
			for i := 0; i < rows; i++ {
				fmt.Fprintf(out, "earlier line %d\n", i)
			}
			p := NewTerminalProgress(out, size, redact.NewSanitizer(redact.NewMasker()))
			steps := watchScript()
			resume := func() {}
			defer func() { resume() }()
			for i, lines := range steps {
				if tt.resize != 0 && i == len(steps)/2-tt.late {
					// What was drawn is drawn; what follows waits.
					tm.Drain(t)
					resume = tm.Stall()
				}
				if tt.resize != 0 && i == len(steps)/2 {
					// The terminal resized between two redraws, as a
					// person drags its window, and draws the late ones
					// at its new size.
					tm.Resize(t, tt.resize, rows)
					resume()
				}
				p.Update(lines, time.Duration(i)*time.Second)
			}
			p.Done()
			tm.End(t)
			width := tt.cols
			if tt.resize != 0 {
				width = tt.resize
			}
			lines, scrollback := tm.Lines()
			ids := []string{"StatefulSet.apps/demo/demo-db", "Deployment.apps/demo/demo-web", "ConfigMap/demo/設定-名前"}
			var block []string
			for _, l := range lines {
				if strings.HasPrefix(l, "  ") {
					block = append(block, l)
				}
			}
			if len(block) != len(ids) {
				t.Fatalf("%d lines of the watch on the screen, want %d:\n%s", len(block), len(ids), strings.Join(lines, "\n"))
			}
			for i, id := range ids {
				if !strings.HasPrefix(block[i], "  "+id+": current") {
					t.Errorf("screen line %d: %q, want %s current", i, block[i], id)
				}
				if n := strings.Count(strings.Join(append(scrollback, lines...), "\n"), id); n != 1 {
					t.Errorf("%s shown %d times on the screen and in the scrollback, want once:\nscrollback:\n%s\nscreen:\n%s",
						id, n, strings.Join(scrollback, "\n"), strings.Join(lines, "\n"))
				}
			}
			for _, l := range append(scrollback, lines...) {
				if strings.Contains(l, "Watching the rollout") || strings.HasPrefix(l, "earlier line") || strings.HasPrefix(l, "  ") {
					continue
				}
				if strings.TrimSpace(l) != "" {
					t.Errorf("a fragment of a line left behind: %q", l)
				}
			}
			if tt.resize == 0 || tt.resize > tt.cols {
				// A narrowed terminal that cuts lines rather than wrap
				// them again (as this emulator) loses the rows above
				// the block the redraw moved up too far: a widened or
				// unchanged one keeps them.
				if last := fmt.Sprintf("earlier line %d", rows-1); !contains(append(scrollback, lines...), last) {
					t.Errorf("%q, printed before the watch, is gone:\n%s", last, strings.Join(lines, "\n"))
				}
			}
			// A line cut to the width ends in an ellipsis; the widest
			// fits the terminal.
			if got := block[0]; tt.resize == 0 && len([]rune(got)) > width {
				t.Errorf("line %q wider than %d columns", got, width)
			}
		})
	}
}

// TestTerminalProgressCuts: while live, a line wider than the terminal is
// cut to one column less than its width (East Asian wide runes counting
// two) and ends in an ellipsis.
func TestTerminalProgressCuts(t *testing.T) {
	long := Line{ID: "StatefulSet.apps/demo/demo-db", Text: "in-progress — " + strings.Repeat("x", 300)}
	wide := Line{ID: "ConfigMap/demo/cfg", Text: strings.Repeat("設", 100)}
	for _, cols := range []int{80, 200} {
		var buf strings.Builder
		NewTerminalProgress(&buf, func() (int, int) { return cols, 0 }, nil).Update([]Line{long, wide}, time.Second)
		out := buf.String()
		if !strings.HasPrefix(out, autowrapOff+"\r\x1b[J") || !strings.HasSuffix(out, "\n"+autowrapOn) {
			t.Fatalf("%d columns: %q, want autowrap off, erase, the rows, autowrap on", cols, out)
		}
		rows := strings.Split(strings.TrimSuffix(strings.TrimPrefix(out, autowrapOff+"\r\x1b[J"), "\n"+autowrapOn), "\n")
		if len(rows) != 2 {
			t.Fatalf("%d columns: %d rows, want 2: %q", cols, len(rows), out)
		}
		for _, r := range rows {
			w := 0
			for _, c := range r {
				w++
				if c == '設' {
					w++
				}
			}
			if w > cols-1 || w < cols-2 || !strings.HasSuffix(r, "…") {
				t.Errorf("%d columns: row of %d columns, want %d cut with an ellipsis: %q", cols, w, cols-1, r)
			}
		}
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}
