package report

import (
	"fmt"
	"strings"
	"testing"
)

func TestMarkdownEscapesCells(t *testing.T) {
	out := write(t, fixturePlan(), Options{Format: FormatMarkdown})
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "| ConfigMap") {
			continue
		}
		if !strings.Contains(line, `checksum of it \| restart`) {
			t.Errorf("| in a note not escaped: %s", line)
		}
		// 6 unescaped pipes delimit 5 cells.
		if n := strings.Count(line, "|") - strings.Count(line, `\|`); n != 6 {
			t.Errorf("row has %d cell delimiters, want 6: %s", n, line)
		}
	}
}

func TestMarkdownAckLines(t *testing.T) {
	out := write(t, fixturePlan(), Options{Format: FormatMarkdown})
	destructive, _, ok := strings.Cut(out, "### Changes")
	if !ok {
		t.Fatal("no Changes section")
	}
	for _, want := range []string{
		"`--ack StatefulSet.apps/shop/postgres@9f2c41d7e0ab`", // unacknowledged: the line to add
		"**Blocks the upgrade**",                              // invalid: cannot be acked
	} {
		if !strings.Contains(destructive, want) {
			t.Errorf("destructive section lacks %q:\n%s", want, destructive)
		}
	}
	if strings.Contains(out, "--ack PersistentVolumeClaim") {
		t.Error("an acknowledged change asks for an ack")
	}
	if strings.Contains(out, "--ack Deployment.apps/shop/worker") {
		t.Error("a blocking change offers an ack")
	}
}

func TestMarkdownTruncation(t *testing.T) {
	full := write(t, fixturePlan(), Options{Format: FormatMarkdown})
	if strings.Contains(full, "truncated") {
		t.Fatal("the fixture is truncated under the default limit")
	}
	diffs := strings.Count(full, "<details>")

	// Just short of the full size: the largest diff goes, and only it.
	pw := &planWriter{plan: fixturePlan(), opts: Options{Format: FormatMarkdown}.withDefaults()}
	doc, err := pw.markdownDoc()
	if err != nil {
		t.Fatal(err)
	}
	largest := doc.diffs[0]
	for _, d := range doc.diffs {
		if len(d.block) > len(largest.block) {
			largest = d
		}
	}
	limit := len(full) - 10
	out := write(t, fixturePlan(), Options{Format: FormatMarkdown, MaxMarkdownBytes: limit})
	if len(out) > limit {
		t.Errorf("%d bytes, limit %d", len(out), limit)
	}
	if got := strings.Count(out, "<details>"); got != diffs-1 {
		t.Errorf("%d diffs kept, want %d", got, diffs-1)
	}
	if !strings.Contains(out, fmt.Sprintf("1 of %d diffs were truncated", diffs)) || !strings.Contains(out, "`"+largest.name+"`") {
		t.Errorf("no note naming the truncated diff:\n%s", out)
	}
	if !strings.Contains(out, "| StatefulSet |") {
		t.Error("a table row was dropped although dropping diffs was enough")
	}

	// Tiny: every diff goes, then table rows, then the text is cut.
	for _, limit := range []int{2500, 1500, 600} {
		out := write(t, fixturePlan(), Options{Format: FormatMarkdown, MaxMarkdownBytes: limit})
		if len(out) > limit {
			t.Errorf("limit %d: %d bytes", limit, len(out))
		}
		if strings.Contains(out, "```diff") {
			t.Errorf("limit %d: diffs kept", limit)
		}
		if !strings.HasSuffix(out, "\n") {
			t.Errorf("limit %d: no trailing newline", limit)
		}
		if !strings.Contains(out, "truncated") && !strings.Contains(out, "not shown, to fit") && !strings.Contains(out, "Comment cut") {
			t.Errorf("limit %d: no note on what was left out:\n%s", limit, out)
		}
	}
}

func TestMarkdownBigPlanFitsComment(t *testing.T) {
	out := write(t, bigPlan(1000), Options{Format: FormatMarkdown})
	if len(out) > DefaultMaxMarkdownBytes {
		t.Errorf("%d bytes, over the default limit", len(out))
	}
	if !strings.Contains(out, "diffs were truncated") {
		t.Error("no truncation note")
	}
	if !strings.Contains(out, "StatefulSet") && !strings.Contains(out, "### Destructive changes") {
		t.Error("destructive section lost")
	}
}

func TestMarkdownFence(t *testing.T) {
	if got := fenced("diff", "a\n```\nb\n"); got != "````diff\na\n```\nb\n````" {
		t.Errorf("fenced: %q", got)
	}
	if got := mdCode("a|b", true); got != "`a\\|b`" {
		t.Errorf("mdCode in table: %q", got)
	}
	if got := mdCode("x`y", false); got != "`` x`y ``" {
		t.Errorf("mdCode with backtick: %q", got)
	}
}
