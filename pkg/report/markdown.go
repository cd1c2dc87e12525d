package report

import (
	"fmt"
	"html"
	"io"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// mdDoc is a Markdown report cut into the pieces that truncation may drop:
// table rows from the end, diffs largest first.
type mdDoc struct {
	top   string   // heading, summary, destructive changes, table header
	rows  []string // table rows, destructive first
	after string   // unchanged count, hooks, notes
	diffs []mdDiff // in table order
	// diffsHeading names the sides of the diffs.
	diffsHeading string
	limit        int
}

type mdDiff struct {
	name  string // Kind/name
	block string // the whole <details> block
}

// writeMarkdown writes the pull-request comment view. It stays within
// opts.MaxMarkdownBytes: the largest diffs are dropped first (a note names
// them), then table rows from the end, and as a last resort the text is cut.
func (pw *planWriter) writeMarkdown(w io.Writer) error {
	doc, err := pw.markdownDoc()
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, doc.fit())
	return err
}

// markdownDoc cuts the report into its pieces (mdDoc). Every piece starts
// with the blank line that separates it from the one before and ends with
// one newline, so sizes add up exactly.
func (pw *planWriter) markdownDoc() (*mdDoc, error) {
	p := pw.plan
	changes := shown(p)
	doc := &mdDoc{limit: pw.opts.MaxMarkdownBytes, top: markdownTop(p, changes)}
	for _, c := range changes {
		doc.rows = append(doc.rows, markdownRow(c))
	}
	diffed, creates, deletes := pw.opts.diffed(changes)
	doc.after = markdownAfter(p, creates, deletes)
	s := diffSides(p)
	doc.diffsHeading = fmt.Sprintf("\n### Diffs (%s → %s)\n", s.from, s.to)
	var err error
	if doc.diffs, err = pw.markdownDiffs(diffed, s); err != nil {
		return nil, err
	}
	return doc, nil
}

// markdownTop is the heading, the summary, the destructive changes and the
// table's header.
func markdownTop(p *plan.Plan, changes []*plan.Change) string {
	var top strings.Builder
	fmt.Fprintf(&top, "## %s plan for release %s in %s\n", titles[p.Release.Op()], mdCode(p.Release.Name, false), mdCode(p.Release.Namespace, false))
	fmt.Fprintf(&top, "\n**%s**\n", SummaryLine(p))
	if line := destructiveLine(p); line != "" {
		fmt.Fprintf(&top, "\n%s\n", line)
	}
	if line := p.StaleConfigLine(); line != "" {
		fmt.Fprintf(&top, "\n%s\n", mdText(line))
	}
	if line := p.RestartLine(); line != "" {
		fmt.Fprintf(&top, "\n%s\n", mdText(line))
	}
	top.WriteString("\n" + mdText(releaseLine(p)))
	if p.ServerVersion != "" {
		top.WriteString(", Kubernetes " + mdText(p.ServerVersion))
	}
	top.WriteString(".\n")
	if p.Offline {
		fmt.Fprintf(&top, "\n> [!NOTE]\n> %s\n", offlineLine)
	}
	writeMarkdownDestructive(&top, changes)
	if len(changes) == 0 {
		top.WriteString("\nNo changes.\n")
	} else {
		top.WriteString("\n### Changes\n\n| Kind | Object | Action | Class | Reason |\n| --- | --- | --- | --- | --- |\n")
	}
	return top.String()
}

// markdownAfter is what follows the table: the unchanged count, what was
// derived or shown whole, hooks, blockers and notes.
func markdownAfter(p *plan.Plan, creates, deletes int) string {
	var after strings.Builder
	if n := noops(p); n > 0 {
		fmt.Fprintf(&after, "\n_%s unchanged, not shown._\n", plural(n, "object", "objects"))
	}
	if line := derivedLine(p); line != "" {
		fmt.Fprintf(&after, "\n_%s_\n", mdText(line))
	}
	if line := wholeObjectsLine(creates, deletes); line != "" {
		fmt.Fprintf(&after, "\n_%s_\n", mdText(line))
	}
	if len(p.Hooks) > 0 {
		after.WriteString("\n### Hooks\n\nHelm creates each anew when its event runs.\n\n")
		for _, h := range p.Hooks {
			fmt.Fprintf(&after, "- %s %s\n", mdCode(h.Kind+"/"+h.Name, false), mdText(hookDetail(h)))
		}
	}
	mdList(&after, "Blocked, whatever is acknowledged", p.Blockers)
	mdList(&after, "Notes", p.Notes)
	return after.String()
}

// mdList is a section of items, none without items.
func mdList(b *strings.Builder, heading string, items []string) {
	if len(items) == 0 {
		return
	}
	b.WriteString("\n### " + heading + "\n\n")
	for _, item := range items {
		fmt.Fprintf(b, "- %s\n", mdText(item))
	}
}

// markdownDiffs are the diffs of diffed changes, then the hooks' diffs,
// each a <details> block, truncated alike.
func (pw *planWriter) markdownDiffs(diffed []*plan.Change, s sides) ([]mdDiff, error) {
	p := pw.plan
	diffs, err := diffAll(diffed, pw.opts.Context, s)
	if err != nil {
		return nil, err
	}
	var out []mdDiff
	for i, c := range diffed {
		if diffs[i] == "" {
			continue
		}
		name := c.ID.Kind + "/" + c.ID.Name
		block := fmt.Sprintf("\n<details><summary>%s (%s)</summary>\n\n%s\n\n</details>\n",
			html.EscapeString(name), html.EscapeString(verdict(c)), fenced("diff", diffs[i]))
		out = append(out, mdDiff{name: name, block: block})
	}
	hdiffs, err := hookDiffs(p.Hooks, pw.opts.Context)
	if err != nil {
		return nil, err
	}
	for i, h := range p.Hooks {
		if hdiffs[i] == "" {
			continue
		}
		name := h.Kind + "/" + h.Name
		block := fmt.Sprintf("\n<details><summary>hook %s (%s → %s)</summary>\n\n%s\n\n</details>\n",
			html.EscapeString(name), hookSides.from, hookSides.to, fenced("diff", hdiffs[i]))
		out = append(out, mdDiff{name: "hook " + name, block: block})
	}
	return out, nil
}

// writeMarkdownDestructive lists destructive changes with every reason and
// what each still needs: the ack flag to add, or that it cannot be acked.
func writeMarkdownDestructive(b *strings.Builder, changes []*plan.Change) {
	if len(changes) == 0 || !changes[0].Destructive {
		return
	}
	b.WriteString("\n### Destructive changes\n\n")
	for _, c := range changes {
		if !c.Destructive {
			break
		}
		fmt.Fprintf(b, "- **%s** %s: %s\n", mdText(c.ID.Kind), mdCode(objectName(c), false), mdText(verdict(c)))
		for _, r := range c.Reasons {
			fmt.Fprintf(b, "  - %s\n", mdReason(r, false))
		}
		switch {
		case c.Blocking:
			b.WriteString("  - **Blocks the upgrade**: cannot be acknowledged; fix the chart or the cluster.\n")
		case c.Acknowledged:
			b.WriteString("  - Acknowledged.\n")
		default:
			fmt.Fprintf(b, "  - To acknowledge, add %s\n", mdCode(c.AckFlag(), false))
		}
	}
}

// markdownRow is one table row; the reason cell also carries rollout
// impact, drift and notes, one per line.
func markdownRow(c *plan.Change) string {
	var lines []string
	for _, r := range c.Reasons {
		lines = append(lines, mdReason(r, true))
	}
	if c.Rollout != nil {
		lines = append(lines, "rollout: "+mdText(rolloutText(c.Rollout)))
	}
	for _, d := range c.Drift {
		lines = append(lines, "drift: "+mdText(driftText(d)))
	}
	for _, n := range c.Notes {
		lines = append(lines, "note: "+mdText(n))
	}
	for _, u := range c.Consumers {
		lines = append(lines, "reader: "+mdText(u.Text()))
	}
	class := mdText(className(c))
	if c.Destructive {
		class += " **(destructive)**"
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s |\n",
		mdText(c.ID.Kind), mdText(objectName(c)), mdText(string(c.Action)), class, strings.Join(lines, "<br>"))
}

// verdict is the action and, for updates, the class: "update, rolling".
func verdict(c *plan.Change) string {
	if c.Class == plan.ClassNone {
		return string(c.Action)
	}
	return string(c.Action) + ", " + string(c.Class)
}

// mdReason renders a reason with its path as code.
func mdReason(r plan.Reason, inTable bool) string {
	s := mdText(r.Message)
	if r.Path != "" {
		s = mdCode(r.Path, inTable) + ": " + s
	}
	if r.Source != "" && r.Source != plan.SourceServer {
		s += " (source: " + mdText(string(r.Source)) + ")"
	}
	return s + mdText(noiseLabel(r))
}

// mdEscaper backslash-escapes the punctuation Markdown (and a table cell's
// "|") would interpret; line breaks become spaces.
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", `*`, `\*`, `_`, `\_`, `[`, `\[`, `]`, `\]`,
	`<`, `\<`, `>`, `\>`, `|`, `\|`, `~`, `\~`, `&`, `\&`, "\r\n", " ", "\n", " ",
)

// mdText escapes plain text for Markdown, including table cells.
func mdText(s string) string { return mdEscaper.Replace(s) }

// mdCode renders s as a code span. Inside a table, "|" must still be
// escaped (GFM splits cells before parsing code spans).
func mdCode(s string, inTable bool) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ").Replace(s)
	if inTable {
		s = strings.ReplaceAll(s, "|", `\|`)
	}
	ticks := "`"
	for strings.Contains(s, ticks) {
		ticks += "`"
	}
	if len(ticks) > 1 || strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return ticks + " " + s + " " + ticks
	}
	return ticks + s + ticks
}

// fenced wraps text in a code fence longer than any backtick run in it.
func fenced(lang, text string) string {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	return fence + lang + "\n" + strings.TrimSuffix(text, "\n") + "\n" + fence
}

// render assembles the document with the first keepRows table rows and the
// diffs not marked in dropped.
func (d *mdDoc) render(keepRows int, dropped []bool) string {
	var b strings.Builder
	b.Grow(d.limit)
	b.WriteString(d.top)
	for _, r := range d.rows[:keepRows] {
		b.WriteString(r)
	}
	if n := len(d.rows) - keepRows; n > 0 {
		b.WriteString(d.rowsNote(n))
	}
	b.WriteString(d.after)
	if len(d.diffs) > 0 {
		b.WriteString(d.diffsHeading)
		b.WriteString(d.diffsNote(dropped))
		for i, df := range d.diffs {
			if !dropped[i] {
				b.WriteString(df.block)
			}
		}
	}
	return b.String()
}

func (d *mdDoc) rowsNote(n int) string {
	return fmt.Sprintf("\n_…and %s not shown, to fit the comment size limit; run with `-o text` to see all._\n",
		plural(n, "more object", "more objects"))
}

// maxNamedDiffs bounds how many truncated diffs the note names.
const maxNamedDiffs = 10

// diffsNote says how many diffs were truncated and names the first ones.
func (d *mdDoc) diffsNote(dropped []bool) string {
	var names []string
	n := 0
	for i, df := range d.diffs {
		if dropped[i] {
			n++
			if len(names) < maxNamedDiffs {
				names = append(names, mdCode(df.name, false))
			}
		}
	}
	if n == 0 {
		return ""
	}
	if n > len(names) {
		names = append(names, fmt.Sprintf("and %d more", n-len(names)))
	}
	return fmt.Sprintf("\n> [!NOTE]\n> %d of %d diffs were truncated to keep this comment under %d bytes (largest first): %s. Run with `-o text` to see them.\n",
		n, len(d.diffs), d.limit, strings.Join(names, ", "))
}

// fit renders the document within d.limit bytes.
func (d *mdDoc) fit() string {
	dropped := make([]bool, len(d.diffs))
	keepRows := len(d.rows)
	out := d.render(keepRows, dropped)
	if len(out) <= d.limit {
		return out
	}

	// Drop diffs, largest first, tracking the size without re-rendering.
	size := len(out)
	order := make([]int, len(d.diffs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return len(d.diffs[order[a]].block) > len(d.diffs[order[b]].block) })
	for _, i := range order {
		if size <= d.limit {
			break
		}
		before := len(d.diffsNote(dropped))
		dropped[i] = true
		size += len(d.diffsNote(dropped)) - before - len(d.diffs[i].block)
	}

	// Then table rows from the end (destructive rows come first).
	rowsNote := 0
	for size > d.limit && keepRows > 0 {
		keepRows--
		size -= len(d.rows[keepRows])
		size += len(d.rowsNote(len(d.rows)-keepRows)) - rowsNote
		rowsNote = len(d.rowsNote(len(d.rows) - keepRows))
	}
	out = d.render(keepRows, dropped)
	if len(out) <= d.limit {
		return out
	}

	// Last resort: cut at a line boundary.
	const cut = "\n_Comment cut to fit the size limit; run with `-o text` to see the whole plan._\n"
	end := max(d.limit-len(cut), 0)
	if i := strings.LastIndexByte(out[:end], '\n'); i >= 0 {
		end = i
	}
	for end > 0 && !utf8.RuneStart(out[end]) {
		end--
	}
	return out[:end] + cut
}
