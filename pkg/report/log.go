package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// A release's log (`log RELEASE`) is one entry per revision, newest first,
// each with the classified changes in the JSON report's own forms: the
// per-revision record keeps them as RecordForm makes them, and a revision
// without one gets them from the same function over a plan computed from
// Helm's stored manifests. One printed form per object: -p prints each
// change as the plan's table row and diff.

// LogKind is the kind of the JSON log document.
const LogKind = "Log"

// RecordForm is what a revision's record keeps of the plan applied: the
// summary, the changes that change something (noops are only counted),
// each with its diff (context lines of context), and the rollout's
// outcome; all the JSON report's forms, already masked as the report is.
func RecordForm(p *plan.Plan, context int) (summary, changes, outcome json.RawMessage, err error) {
	pw := &planWriter{plan: p, opts: Options{Context: context}.withDefaults()}
	doc, err := pw.jsonDocument()
	if err != nil {
		return nil, nil, nil, err
	}
	shownChanges := shown(p)
	diffs, err := diffAll(shownChanges, pw.opts.Context, diffSides(p))
	if err != nil {
		return nil, nil, nil, err
	}
	items := make([]jsonChange, len(shownChanges))
	for i, c := range shownChanges {
		items[i] = toJSONChange(c, diffs[i])
	}
	if summary, err = json.Marshal(doc.Summary); err != nil {
		return nil, nil, nil, err
	}
	if changes, err = json.Marshal(items); err != nil {
		return nil, nil, nil, err
	}
	if doc.Outcome != nil {
		if outcome, err = json.Marshal(doc.Outcome); err != nil {
			return nil, nil, nil, err
		}
	}
	return summary, changes, outcome, nil
}

// WithoutDiffs is changes (RecordForm's) with every diff left out: what a
// record keeps when they do not fit its bound.
func WithoutDiffs(changes json.RawMessage) json.RawMessage {
	var items []jsonChange
	if json.Unmarshal(changes, &items) != nil {
		return nil
	}
	for i := range items {
		items[i].Diff = ""
	}
	out, err := json.Marshal(items)
	if err != nil {
		return nil
	}
	return out
}

// LogEntry is one revision of the log. Every text in it has passed
// through the sanitiser (redact's Text) before it reaches here: records
// and descriptions can be written by anyone who may write in the
// namespace.
type LogEntry struct {
	Revision    int
	Updated     time.Time
	Chart       string
	AppVersion  string
	Status      string
	Description string
	// Operation is install, upgrade, rollback or uninstall ("" unknown);
	// RollbackTo the revision a rollback went back to.
	Operation  string
	RollbackTo int
	// Computed: the tool kept no record of this revision (plain helm, or
	// before the tool); its changes were computed from the stored
	// manifests of the revision before it and its own, offline. Why says
	// why there is no record ("" for none: plain helm).
	Computed bool
	Why      string
	By       plan.Who
	// Helm is what Helm said of the apply, as recorded.
	Helm string
	// Summary, Changes and Outcome are RecordForm's.
	Summary, Changes, Outcome json.RawMessage
	Recreated                 []string
	Events                    []plan.Event
	Notes                     []string
}

// LogOptions are how the log is written.
type LogOptions struct {
	// Format is FormatText (also ""), FormatJSON or FormatMarkdown.
	Format string
	// Patch (-p) shows each change with its verdict, reasons and diff.
	Patch bool
	Color bool
}

// jsonLog is the log's JSON document.
type jsonLog struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Release    string         `json:"release"`
	Namespace  string         `json:"namespace"`
	Revisions  []jsonLogEntry `json:"revisions"`
}

type jsonLogEntry struct {
	Revision    int          `json:"revision"`
	Updated     time.Time    `json:"updated"`
	Chart       string       `json:"chart"`
	AppVersion  string       `json:"appVersion,omitempty"`
	Status      string       `json:"status"`
	Description string       `json:"description,omitempty"`
	Operation   string       `json:"operation,omitempty"`
	RollbackTo  int          `json:"rollbackTo,omitempty"`
	Computed    bool         `json:"computed"`
	Why         string       `json:"why,omitempty"`
	By          *plan.Who    `json:"by,omitempty"`
	Helm        string       `json:"helm,omitempty"`
	Summary     *jsonSummary `json:"summary,omitempty"`
	Changes     []jsonChange `json:"changes"`
	Outcome     *jsonOutcome `json:"outcome,omitempty"`
	Recreated   []string     `json:"recreated,omitempty"`
	Events      []plan.Event `json:"events,omitempty"`
	Notes       []string     `json:"notes,omitempty"`
}

// decoded is an entry's stored forms decoded; a form that does not decode
// (a record written by another version) is noted, not fatal.
func (e *LogEntry) decoded() jsonLogEntry {
	je := jsonLogEntry{Revision: e.Revision, Updated: e.Updated.UTC(), Chart: e.Chart, AppVersion: e.AppVersion, Status: e.Status,
		Description: e.Description, Operation: e.Operation, RollbackTo: e.RollbackTo, Computed: e.Computed, Why: e.Why, Helm: e.Helm,
		Recreated: e.Recreated, Events: e.Events, Notes: e.Notes, Changes: []jsonChange{}}
	if e.By != (plan.Who{}) {
		by := e.By
		je.By = &by
	}
	decode := func(name string, raw json.RawMessage, into interface{}) {
		if len(raw) == 0 {
			return
		}
		if err := json.Unmarshal(raw, into); err != nil {
			je.Notes = append(je.Notes, fmt.Sprintf("the record's %s do not decode: %v", name, err))
		}
	}
	decode("summary", e.Summary, &je.Summary)
	decode("changes", e.Changes, &je.Changes)
	decode("outcome", e.Outcome, &je.Outcome)
	return je
}

// WriteLog writes the entries of release (newest first) as opts asks.
func WriteLog(w io.Writer, release, namespace string, entries []LogEntry, opts LogOptions) error {
	decoded := make([]jsonLogEntry, len(entries))
	for i := range entries {
		decoded[i] = entries[i].decoded()
		if !opts.Patch {
			for j := range decoded[i].Changes {
				decoded[i].Changes[j].Diff = ""
			}
		}
	}
	switch opts.Format {
	case "", FormatText:
		return writeLogText(w, decoded, opts)
	case FormatJSON:
		doc := jsonLog{APIVersion: plan.APIVersion, Kind: LogKind, Release: release, Namespace: namespace, Revisions: decoded}
		data, err := encodeJSON(doc, "")
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	case FormatMarkdown:
		return writeLogMarkdown(w, release, namespace, decoded, opts)
	}
	return fmt.Errorf("report: unknown log format %q (want %s, %s or %s)", opts.Format, FormatText, FormatJSON, FormatMarkdown)
}

// logHeading is an entry's first line: "revision 3 (upgrade, failed)".
func logHeading(e *jsonLogEntry) string {
	what := []string{}
	if e.Operation != "" {
		op := e.Operation
		if e.RollbackTo > 0 {
			op += fmt.Sprintf(" to revision %d", e.RollbackTo)
		}
		what = append(what, op)
	}
	what = append(what, e.Status)
	if e.Computed {
		what = append(what, "computed")
	}
	return fmt.Sprintf("revision %d (%s)", e.Revision, strings.Join(what, ", "))
}

// logFields are an entry's labelled lines, in order, for text and Markdown.
func logFields(e *jsonLogEntry) [][2]string {
	var f [][2]string
	add := func(label, value string) {
		if value != "" {
			f = append(f, [2]string{label, value})
		}
	}
	if !e.Updated.IsZero() { // an unreadable revision's record says no date
		add("Date", e.Updated.Format(time.RFC3339))
	}
	chart := e.Chart
	if e.AppVersion != "" {
		chart += " (app " + e.AppVersion + ")"
	}
	add("Chart", chart)
	if e.By != nil {
		add("By", whoLine(*e.By))
		add("Command", e.By.Command)
	} else if e.Computed && e.Why != "" {
		add("By", "not recorded: "+e.Why)
	} else if e.Computed {
		add("By", "not recorded: no record of the tool (plain helm, or before the tool)")
	}
	add("Changes", changesLine(e))
	for _, c := range e.Changes {
		if c.Acknowledged && !e.Computed { // a computed entry knows of no acknowledgement
			add("Acknowledged", ackLine(&c))
		}
	}
	for _, r := range e.Recreated {
		add("Recreated", r)
	}
	if e.Outcome != nil {
		add("Rollout", outcomeLine(e.Outcome))
		for _, ob := range e.Outcome.Objects {
			if ob.Predicted == "" {
				continue
			}
			name := ob.Kind + "/" + objectPath(ob.Namespace, ob.Name)
			if ob.AsPredicted {
				add("Outcome", fmt.Sprintf("%s: %s (predicted: %s)", name, ob.Observed, ob.Predicted))
			} else {
				add("Outcome", fmt.Sprintf("%s: predicted %s, observed %s", name, ob.Predicted, ob.Observed))
			}
		}
	}
	add("Helm", e.Helm)
	for _, ev := range e.Events {
		line := ev.At.UTC().Format(time.RFC3339)
		if who := whoLine(ev.By); who != "" {
			line += " by " + who
		}
		label := map[string]string{"recover": "Recovered", "uninstall": "Uninstalled"}[ev.Kind]
		if label == "" {
			label = "Event"
		}
		add(label, line+": "+ev.Line)
	}
	desc := e.Description
	if e.Outcome != nil && strings.HasPrefix(desc, plan.RolloutFailedLine) {
		// The tool's own line of the outcome the Rollout line says whole
		// (Helm's is cut to its budget): said once.
		desc = strings.TrimSuffix(plan.RolloutFailedLine, ": ") + " (what failed: the Rollout line)"
	}
	add("Description", desc)
	for _, n := range e.Notes {
		add("Note", n)
	}
	return f
}

// whoLine is "alice, through helmfile (the drop-in helm), commit abc, pipeline 42".
func whoLine(w plan.Who) string {
	var parts []string
	if w.User != "" {
		parts = append(parts, w.User)
	}
	if w.Caller != "" {
		parts = append(parts, "through "+w.Caller+" (the drop-in helm)")
	}
	if w.Commit != "" {
		parts = append(parts, "commit "+w.Commit)
	}
	if w.Pipeline != "" {
		parts = append(parts, "pipeline "+w.Pipeline)
	}
	if w.Tool != "" {
		parts = append(parts, "with "+w.Tool)
	}
	return strings.Join(parts, ", ")
}

// changesLine counts an entry's changes by verdict, the summary line's
// buckets in its order: "1 to create, 2 rolling, 1 recreate-required
// (destructive, 1 acknowledged)".
func changesLine(e *jsonLogEntry) string {
	if e.Summary == nil {
		return ""
	}
	s := e.Summary
	counts := map[string]int{
		string(plan.ActionCreate): s.Create, string(plan.ClassInPlace): s.InPlace, string(plan.ClassRolling): s.Rolling,
		string(plan.ClassRecreateRequired): s.Recreate, string(plan.ClassInvalid): s.Invalid, string(plan.ActionDelete): s.Delete,
		regeneratedBucket: s.Regenerated, ignoredBucket: s.Ignored, string(plan.ClassManual): s.Manual,
	}
	var parts []string
	for _, b := range summaryBuckets {
		if counts[b.key] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[b.key], b.label))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no changes")
	}
	line := strings.Join(parts, ", ")
	if s.Noop > 0 {
		line += fmt.Sprintf("; %d unchanged", s.Noop)
	}
	switch {
	case s.Destructive > 0 && e.Computed: // nothing to say who acknowledged what
		line += fmt.Sprintf("; %d destructive", s.Destructive)
	case s.Destructive > 0:
		line += fmt.Sprintf("; %d destructive (%d acknowledged)", s.Destructive, s.Destructive-s.Blocked)
	}
	if e.Computed {
		line += " [computed from the stored manifests, offline]"
	}
	return line
}

// outcomeLine is the rollout's outcome: "failed: Deployment/ns/web failed:
// …; predicted: 1 as predicted, 0 differ".
func outcomeLine(o *jsonOutcome) string {
	state := "all current"
	var failed []string
	for _, ob := range o.Objects {
		if ob.State == plan.StateFailed || ob.State == plan.StateInProgress {
			f := fmt.Sprintf("%s/%s %s", ob.Kind, objectPath(ob.Namespace, ob.Name), ob.State)
			if ob.Reason != "" {
				f += ": " + ob.Reason
			}
			failed = append(failed, f)
		}
	}
	switch {
	case o.Interrupted:
		// Not a failure: the watch stopped before the rollout's end.
		state = fmt.Sprintf("watch interrupted after %s, %d not current yet", (time.Duration(o.Seconds * float64(time.Second))).Round(time.Second), o.Failed)
		if len(failed) > 0 {
			state += " (" + strings.Join(failed, "; ") + ")"
		}
	case o.Failed > 0 && o.TimedOut:
		state = fmt.Sprintf("watch timed out after %s, %d failed or not ready (%s)", (time.Duration(o.Seconds * float64(time.Second))).Round(time.Second), o.Failed, strings.Join(failed, "; "))
	case o.Failed > 0:
		state = fmt.Sprintf("%d failed or not ready (%s)", o.Failed, strings.Join(failed, "; "))
	}
	return fmt.Sprintf("%s; %d as predicted, %d differ", state, o.AsPredicted, o.Differ)
}

func objectPath(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// ackLine is an acknowledged change as --ack names it, with where the
// acknowledgement came from: "recreate-required
// StatefulSet.apps/shop/db@9f2c41d7e0ab via flag".
func ackLine(c *jsonChange) string {
	pc := toPlanChange(c)
	s := pc.Verdict() + " " + pc.ID.String() + "@" + c.Fingerprint
	if c.AckedBy != "" {
		s += " via " + c.AckedBy
	}
	return s
}

// toPlanChange is c as the plan's change, for the report's printed forms
// of one object (the table row, the Markdown row).
func toPlanChange(c *jsonChange) *plan.Change {
	gv, _ := schema.ParseGroupVersion(c.APIVersion)
	pc := &plan.Change{
		ID:         manifest.ObjectID{Group: gv.Group, Kind: c.Kind, Namespace: c.Namespace, Name: c.Name},
		APIVersion: c.APIVersion, Action: plan.Action(c.Action), Class: plan.Class(c.Class),
		Destructive: c.Destructive, Acknowledged: c.Acknowledged, AckedBy: c.AckedBy, Blocking: c.Blocking,
		Regenerated: c.Regenerated, Ignored: c.Ignored, Fingerprint: c.Fingerprint, Notes: c.Notes, Pruned: c.Pruned,
	}
	for _, r := range c.Reasons {
		pc.Reasons = append(pc.Reasons, plan.Reason{Path: r.Path, Message: r.Message, Source: plan.Source(r.Source),
			Regenerated: r.Regenerated, IgnoredBy: r.IgnoredBy, IgnoredIn: r.IgnoredIn, Manager: r.Manager, Consumer: r.Consumer})
	}
	if r := c.Rollout; r != nil {
		pc.Rollout = &plan.Rollout{Replicas: r.Replicas, Strategy: r.Strategy, Impact: r.Impact}
	}
	for _, d := range c.Drift {
		pc.Drift = append(pc.Drift, plan.Drift{Path: d.Path, Reverted: d.Reverted, Manager: d.Manager})
	}
	return pc
}

func writeLogText(w io.Writer, entries []jsonLogEntry, opts LogOptions) error {
	pal := newPalette(opts.Color)
	bw := bufio.NewWriter(w)
	if len(entries) == 0 {
		fmt.Fprintln(bw, "No revisions.")
	}
	for i := range entries {
		e := &entries[i]
		if i > 0 {
			fmt.Fprintln(bw)
		}
		fmt.Fprintln(bw, pal.yellow.Sprint(logHeading(e)))
		for _, f := range logFields(e) {
			fmt.Fprintf(bw, "%-13s %s\n", f[0]+":", f[1])
		}
		if !opts.Patch || len(e.Changes) == 0 {
			continue
		}
		fmt.Fprintln(bw)
		changes := make([]*plan.Change, len(e.Changes))
		for j := range e.Changes {
			changes[j] = toPlanChange(&e.Changes[j])
		}
		writeTextTable(bw, pal, changes)
		for _, c := range e.Changes {
			if c.Diff != "" {
				fmt.Fprintln(bw)
				writeTextDiff(bw, pal, c.Diff)
			}
		}
	}
	return bw.Flush()
}

func writeLogMarkdown(w io.Writer, release, namespace string, entries []jsonLogEntry, opts LogOptions) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## Log of release %s in %s\n", mdCode(release, false), mdCode(namespace, false))
	if len(entries) == 0 {
		b.WriteString("\nNo revisions.\n")
	}
	for i := range entries {
		e := &entries[i]
		fmt.Fprintf(&b, "\n### %s\n\n", mdText(logHeading(e)))
		for _, f := range logFields(e) {
			fmt.Fprintf(&b, "- **%s:** %s\n", f[0], mdText(f[1]))
		}
		if !opts.Patch || len(e.Changes) == 0 {
			continue
		}
		b.WriteString("\n| Kind | Object | Action | Class | Reason |\n| --- | --- | --- | --- | --- |\n")
		for j := range e.Changes {
			b.WriteString(markdownRow(toPlanChange(&e.Changes[j])))
		}
		for j := range e.Changes {
			c := &e.Changes[j]
			if c.Diff == "" {
				continue
			}
			pc := toPlanChange(c)
			fmt.Fprintf(&b, "\n<details><summary>%s (%s)</summary>\n\n%s\n\n</details>\n",
				html.EscapeString(c.Kind+"/"+c.Name), html.EscapeString(verdict(pc)), fenced("diff", c.Diff))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
