// Package report presents a plan: a text view for terminals, a versioned JSON
// document for tools, a Markdown view for pull-request comments, SARIF for
// code-scanning tools, and GitHub Actions annotations of destructive changes. It
// only reads the plan; building it is the job of the stages before.
//
// Nothing here prints a raw patch or a reason's before/after values: the only
// object content shown is the YAML of Change.Before and Change.After, which the
// earlier stages strip of server fields and mask for Secrets (and which this
// package checks again, see guard).
package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// formats are the output formats, in the order help text lists them.
func formats() []string { return []string{FormatText, FormatJSON, FormatMarkdown, FormatSARIF} }

// IsFormat reports whether name is an output format.
func IsFormat(name string) bool { return slices.Contains(formats(), name) }

// FormatList lists the output formats for help and error text: "text, json, markdown or sarif".
func FormatList() string {
	f := formats()
	return strings.Join(f[:len(f)-1], ", ") + " or " + f[len(f)-1]
}

// Output formats accepted in Options.Format.
const (
	FormatText     = "text"
	FormatJSON     = "json"
	FormatMarkdown = "markdown"
)

// Defaults applied to a zero Options field, and the Context that asks for
// no context lines.
const (
	DefaultContext          = 3
	NoContext               = -1
	DefaultMaxMarkdownBytes = 60000 // a GitHub comment holds 65536 characters
)

// Options controls how a plan is written.
type Options struct {
	// Format is FormatText (also when empty), FormatJSON, FormatMarkdown or
	// FormatSARIF.
	Format string
	// Color turns on ANSI colours in the text format. The caller decides
	// (TTY, NO_COLOR); JSON and Markdown are never coloured.
	Color bool
	// Context is the number of unchanged lines around each diff hunk:
	// 0 means DefaultContext, NoContext (any negative value) means none.
	Context int
	// MaxMarkdownBytes bounds the Markdown output; 0 means
	// DefaultMaxMarkdownBytes. Diffs are truncated first to stay under it.
	MaxMarkdownBytes int
	// ChartDir is the new chart's directory as the user named it (relative
	// to the repository root in CI), or "" when the chart is not a local
	// directory. SARIF results point at its templates.
	ChartDir string
	// Location, when set, is where every SARIF result points instead (the
	// changed line of a GitOps object).
	Location *Location
	// ToolVersion is the tool's version, shown in SARIF output when set.
	ToolVersion string
	// HideSecrets shows Secrets' verdicts but not their contents, not even
	// masked: no diff, no values (--hide-secret).
	HideSecrets bool
	// WholeObjects shows, in text and Markdown, the diffs of the objects
	// created and deleted (-p/--diff): each is a whole manifest, which
	// would push the table and the destructive lines out of sight, and
	// the table says already what is created or deleted. JSON always
	// carries every diff.
	WholeObjects bool
}

// diffed is changes whose diffs the text and Markdown reports print, and
// how many objects to create and to delete they leave out (see
// Options.WholeObjects).
func (o Options) diffed(changes []*plan.Change) (out []*plan.Change, creates, deletes int) {
	if o.WholeObjects {
		return changes, 0, 0
	}
	for _, c := range changes {
		switch {
		case c.Action == plan.ActionCreate && c.After != nil:
			creates++
		case c.Action == plan.ActionDelete && c.Before != nil:
			deletes++
		default:
			out = append(out, c)
		}
	}
	return out, creates, deletes
}

// wholeObjectsLine says which manifests the report leaves out (see
// Options.diffed); "" when none.
func wholeObjectsLine(creates, deletes int) string {
	var what []string
	if creates > 0 {
		what = append(what, plural(creates, "object", "objects")+" to create")
	}
	if deletes > 0 {
		what = append(what, plural(deletes, "object", "objects")+" to delete")
	}
	if len(what) == 0 {
		return ""
	}
	return "Manifests of the " + strings.Join(what, " and the ") + " not shown (the table names them): -p/--diff shows them."
}

// Write writes p to w in the format opts.Format names.
func Write(w io.Writer, p *plan.Plan, opts Options) error {
	if p == nil {
		return errors.New("report: no plan to write")
	}
	if opts.HideSecrets {
		p = hideSecrets(p)
	}
	pw := &planWriter{plan: p, opts: opts.withDefaults()}
	switch opts.Format {
	case "", FormatText:
		return pw.writeText(w)
	case FormatJSON:
		return pw.writeJSON(w)
	case FormatMarkdown:
		return pw.writeMarkdown(w)
	case FormatSARIF:
		return pw.writeSARIF(w)
	default:
		return fmt.Errorf("report: unknown output format %q (want %s, %s, %s or %s)",
			opts.Format, FormatText, FormatJSON, FormatMarkdown, FormatSARIF)
	}
}

// hiddenSecretNote marks a Secret whose contents --hide-secret hides.
const hiddenSecretNote = "contents hidden (--hide-secret)"

// hideSecrets returns a copy of p whose Secrets carry no contents.
func hideSecrets(p *plan.Plan) *plan.Plan {
	out := *p
	out.Changes = slices.Clone(p.Changes)
	for i := range out.Changes {
		c := &out.Changes[i]
		if c.ID.Group != "" || !strings.EqualFold(c.ID.Kind, "Secret") {
			continue
		}
		c.Before, c.After = nil, nil
		c.Reasons = slices.Clone(c.Reasons)
		for j := range c.Reasons {
			r := &c.Reasons[j]
			r.Before, r.After = "", ""
			if redact.ContainsMasked(r.Message) {
				r.Message = "changed" // not even the masked value
			}
		}
		c.Notes = append(slices.Clone(c.Notes), hiddenSecretNote)
	}
	return &out
}

func (o Options) withDefaults() Options {
	switch {
	case o.Context == 0:
		o.Context = DefaultContext
	case o.Context < 0:
		o.Context = 0
	}
	if o.MaxMarkdownBytes <= 0 {
		o.MaxMarkdownBytes = DefaultMaxMarkdownBytes
	}
	return o
}

// planWriter holds what every format needs; it has one method per format.
type planWriter struct {
	plan *plan.Plan
	opts Options
}

// summaryBuckets are the buckets of the summary line in order, keyed by
// bucketKey.
var summaryBuckets = []struct{ key, label string }{
	{string(plan.ActionCreate), "to create"},
	{string(plan.ClassInPlace), "in-place"},
	{string(plan.ClassRolling), "rolling"},
	{string(plan.ClassRecreateRequired), "recreate-required"},
	{string(plan.ClassInvalid), "invalid"},
	{string(plan.ActionDelete), "to delete"},
	{regeneratedBucket, "regenerated"},
	{ignoredBucket, "ignored"},
	{string(plan.ClassManual), "manual (crds/, not applied by Helm)"},
}

// ignoredBucket holds the updates that change only fields ignored by the
// user's rules; listed only when not empty.
const ignoredBucket = "ignored"

// regeneratedBucket holds the updates that change only fields regenerated
// on every render; like invalid, it is listed only when not empty.
const regeneratedBucket = "regenerated"

// regeneratedLabel follows every reason at a regenerated field.
const regeneratedLabel = " (regenerated on every render)"

// noiseLabel says why a reason does not count: regenerated, or ignored by
// a rule; "" when it counts.
func noiseLabel(r plan.Reason) string {
	switch {
	case r.Regenerated:
		return regeneratedLabel
	case r.IgnoredBy != "" && r.IgnoredIn != "":
		return " (ignored by rule " + r.IgnoredIn + " " + r.IgnoredBy + ")"
	case r.IgnoredBy != "":
		return " (ignored by rule --ignore " + r.IgnoredBy + ")"
	}
	return ""
}

// bucketKey is an update's class, or another change's action.
func bucketKey(c *plan.Change) string {
	if c.Class == plan.ClassManual {
		return string(plan.ClassManual)
	}
	if c.Regenerated {
		return regeneratedBucket
	}
	if c.Ignored {
		return ignoredBucket
	}
	if c.Action == plan.ActionUpdate {
		return string(c.Class)
	}
	return string(c.Action)
}

// SummaryLine returns the plan's one-line summary, e.g.
// "Plan: 1 to create, 2 in-place, 1 rolling, 1 recreate-required (destructive), 0 to delete".
// The invalid and regenerated buckets appear only when not empty; "(destructive)"
// marks a bucket holding at least one destructive change.
func SummaryLine(p *plan.Plan) string {
	count := map[string]int{}
	destructive := map[string]bool{}
	for i := range p.Changes {
		key := bucketKey(&p.Changes[i])
		count[key]++
		destructive[key] = destructive[key] || p.Changes[i].Destructive
	}
	parts := make([]string, 0, len(summaryBuckets))
	for _, b := range summaryBuckets {
		if (b.key == string(plan.ClassInvalid) || b.key == regeneratedBucket || b.key == ignoredBucket || b.key == string(plan.ClassManual)) && count[b.key] == 0 {
			continue
		}
		part := fmt.Sprintf("%d %s", count[b.key], b.label)
		if destructive[b.key] {
			part += " (destructive)"
		}
		parts = append(parts, part)
	}
	return "Plan: " + strings.Join(parts, ", ")
}

// shown returns the changes that are not noops (or are, with fields the
// server prunes: a warning), destructive first, then by kind, namespace and
// name: the order of every table and diff list.
func shown(p *plan.Plan) []*plan.Change {
	var out []*plan.Change
	for i := range p.Changes {
		if p.Changes[i].Action != plan.ActionNoop || len(p.Changes[i].Pruned) > 0 {
			out = append(out, &p.Changes[i])
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Destructive != out[j].Destructive {
			return out[i].Destructive
		}
		return out[i].ID.Less(out[j].ID)
	})
	return out
}

// noops counts the changes that change nothing and are not shown.
func noops(p *plan.Plan) int {
	n := 0
	for i := range p.Changes {
		if p.Changes[i].Action == plan.ActionNoop && len(p.Changes[i].Pruned) == 0 {
			n++
		}
	}
	return n
}

// derivedLine says how many verdicts were derived without a server
// dry-run; "" when none was.
func derivedLine(p *plan.Plan) string {
	n := 0
	for i := range p.Changes {
		if p.Changes[i].Prediction == plan.PredictionDerived {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	// What "derived" means for every rule the planner derives by (labels,
	// payloads, a Service's ports, a Deployment's images): not that the
	// change is metadata only.
	what := "the tool computed the API server's answer to its change, which no admission webhook or policy sees"
	if n > 1 {
		what = "the tool computed the API server's answer to their changes, which no admission webhook or policy sees"
	}
	return fmt.Sprintf("%s derived without a server dry-run (source: derived): %s; --server-dry-run=all asks the server instead.",
		plural(n, "verdict", "verdicts"), what)
}

// objectName is "namespace/name", or "name" for cluster-scoped objects.
func objectName(c *plan.Change) string {
	if c.ID.Namespace == "" {
		return c.ID.Name
	}
	return c.ID.Namespace + "/" + c.ID.Name
}

// className is the class of an update, "-" for other actions.
func className(c *plan.Change) string {
	if c.Class == plan.ClassNone {
		return "-"
	}
	return string(c.Class)
}

// reasonText renders a reason as "path: message", naming the source when the
// API server did not establish it (catalogue or Helm rules are less certain).
func reasonText(r plan.Reason) string {
	s := r.Message
	if r.Path != "" {
		s = r.Path + ": " + r.Message
	}
	if r.Source != "" && r.Source != plan.SourceServer {
		s += " (source: " + string(r.Source) + ")"
	}
	return s + noiseLabel(r)
}

// ackStatus says what a destructive change needs before apply; "" for
// changes that need nothing.
func ackStatus(c *plan.Change) string {
	switch {
	case !c.Destructive:
		return ""
	case c.Blocking:
		return "blocks the upgrade: cannot be acknowledged, fix the chart or the cluster"
	case c.Acknowledged:
		return "acknowledged"
	default:
		return "not acknowledged: add " + c.AckFlag()
	}
}

// destructiveLine counts destructive changes by what they still need, e.g.
// "Destructive: 3 (1 acknowledged, 1 to acknowledge, 1 blocking)"; "" when
// there are none.
func destructiveLine(p *plan.Plan) string {
	var total, acked, pending, blocking int
	for i := range p.Changes {
		c := &p.Changes[i]
		if !c.Destructive {
			continue
		}
		total++
		switch {
		case c.Blocking:
			blocking++
		case c.Acknowledged:
			acked++
		default:
			pending++
		}
	}
	if total == 0 {
		return ""
	}
	return fmt.Sprintf("Destructive: %d (%d acknowledged, %d to acknowledge, %d blocking)",
		total, acked, pending, blocking)
}

// titles name each operation's plan: helm upgrade --install's install is
// an upgrade's plan too.
var titles = map[plan.Operation]string{
	plan.OperationInstall:   "Upgrade",
	plan.OperationUpgrade:   "Upgrade",
	plan.OperationRollback:  "Rollback",
	plan.OperationUninstall: "Uninstall",
}

// releaseLine describes the release and the revisions involved.
func releaseLine(p *plan.Plan) string {
	r := p.Release
	s := fmt.Sprintf("Release %s in namespace %s", r.Name, r.Namespace)
	if r.SyncedBy != "" {
		return s + syncedLine(r)
	}
	if p.Offline {
		s += ": base render -> head render"
	} else if r.Op() == plan.OperationUninstall {
		s += fmt.Sprintf(": uninstall revision %d", r.CurrentRevision)
	} else if r.Installs() || r.CurrentRevision == 0 {
		s += fmt.Sprintf(": install as revision %d", r.Revision)
	} else {
		s += fmt.Sprintf(": revision %d -> %d", r.CurrentRevision, r.Revision)
		if r.RollbackTo > 0 {
			s += fmt.Sprintf(" (rollback to revision %d)", r.RollbackTo)
		}
	}
	if r.Chart != "" {
		s += ", chart " + r.Chart
	}
	if r.ServerSide() {
		s += ", server-side apply (Helm 4)"
		if r.ForceConflicts {
			s += " with --force-conflicts"
		}
	} else if r.ForceReplace {
		s += ", --force: Helm replaces every existing object with PUT"
	}
	return s
}

// syncedLine is the rest of releaseLine for a release a GitOps controller
// applies: it has no Helm revision to name.
func syncedLine(r plan.Release) string {
	s := ": head render synced by " + r.SyncedBy + " (no Helm revision)"
	if r.Chart != "" {
		s += ", chart " + r.Chart
	}
	switch {
	case r.ForceReplace:
		return s + ", replaced with PUT"
	case r.ServerSide() && r.ForceConflicts:
		return s + ", server-side apply forcing conflicts"
	case r.ServerSide():
		return s + ", server-side apply"
	}
	return s + ", client-side apply"
}

// offlineLine is said in every human format when the plan had no cluster.
const offlineLine = "Offline plan: verdicts come from the catalogue only; live state and drift were not checked."

// rolloutText describes the pods a workload update replaces.
func rolloutText(r *plan.Rollout) string {
	if r.Impact != "" {
		return r.Impact
	}
	return fmt.Sprintf("%d replicas, strategy %s", r.Replicas, r.Strategy)
}

// driftText describes one drifted field.
func driftText(d plan.Drift) string {
	switch {
	case d.Manager != "" && d.Reverted:
		return d.Path + " differs from the release; owned by field manager " + d.Manager + ": this upgrade takes it back (--force-conflicts) and reverts it"
	case d.Manager != "":
		return d.Path + " differs from the release; owned by field manager " + d.Manager + ", which this server-side apply keeps"
	case d.Reverted:
		return d.Path + " differs from the release; this upgrade reverts it"
	}
	return d.Path + " differs from the release; this upgrade keeps the live value"
}

// hookText describes one hook: "Job/db-migrate (pre-upgrade; delete
// policy before-hook-creation): changed since the last release, runs at apply".
func hookText(h plan.Hook) string {
	return h.Kind + "/" + h.Name + " " + hookDetail(h)
}

// hookDetail is hookText without the name.
func hookDetail(h plan.Hook) string {
	var attrs []string
	if len(h.Events) > 0 {
		attrs = append(attrs, strings.Join(h.Events, ", "))
	}
	if h.Weight != 0 {
		attrs = append(attrs, fmt.Sprintf("weight %d", h.Weight))
	}
	if len(h.DeletePolicies) > 0 {
		attrs = append(attrs, "delete policy "+strings.Join(h.DeletePolicies, ", "))
	}
	s := ""
	if len(attrs) > 0 {
		s = "(" + strings.Join(attrs, "; ") + "): "
	}
	switch h.Action {
	case plan.ActionCreate:
		s += "new"
	case plan.ActionUpdate:
		s += "changed since the last release"
	case plan.ActionNoop:
		s += "unchanged"
	case plan.ActionDelete:
		return s + "no longer in the chart: does not run (Helm leaves the last run's object as its delete policy left it)"
	default:
		s = strings.TrimSuffix(s, ": ")
		if h.RunsAtApply {
			return s + ": runs at apply"
		}
		return s
	}
	if h.RunsAtApply {
		return s + ", runs at apply"
	}
	return s + ", does not run in this operation"
}

// hookSides name the sides of a hook's diff.
var hookSides = sides{"last-release", "new"}

// hookDiffs returns the unified diff of each hook against the last
// release's, in order; "" for unchanged hooks.
func hookDiffs(hooks []plan.Hook, context int) ([]string, error) {
	changes := make([]*plan.Change, len(hooks))
	for i, h := range hooks {
		changes[i] = &plan.Change{ID: h.ID, Action: h.Action, Before: h.Before, After: h.After}
	}
	return diffAll(changes, context, hookSides)
}

// Request is what a run asks of its report: the format (--output), the
// lines of context in diffs (--diff-context) and GitHub Actions
// annotations.
type Request struct {
	Output      string
	DiffContext int
	// WholeObjects is -p/--diff: the manifests of the objects created and
	// deleted too (Options.WholeObjects).
	WholeObjects bool
	// GitHubActions adds workflow-command annotations for destructive
	// changes (the command sets it when GITHUB_ACTIONS=true).
	GitHubActions bool
}

// Options are the report options f asks for; color as the output
// stream allows.
func (f Request) Options(color bool) Options {
	ctx := f.DiffContext
	if ctx == 0 {
		ctx = NoContext // --diff-context 0 means none; Options treats 0 as the default
	}
	return Options{Format: f.Output, Color: color, Context: ctx, WholeObjects: f.WholeObjects}
}

// SavedFormats are the formats a saved plan keeps its report in (show-plan
// prints them): those a reviewer reads.
func SavedFormats() []string { return []string{FormatText, FormatJSON, FormatMarkdown} }

// Reports are p's report in each of SavedFormats as Write prints it without
// colour, by format.
func (f Request) Reports(p *plan.Plan, chartRef string, hideSecrets bool) (map[string]string, error) {
	out := map[string]string{}
	for _, format := range SavedFormats() {
		g := f
		g.Output = format
		opts := g.Options(false)
		opts.ChartDir = ChartDir(chartRef)
		opts.HideSecrets = hideSecrets
		var buf bytes.Buffer
		if err := Write(&buf, p, opts); err != nil {
			return nil, err
		}
		out[format] = buf.String()
	}
	return out, nil
}

// Write writes p as f asks: the report on out (coloured when color
// is set; SARIF results located in the chart chartRef names; Secrets'
// contents hidden with hideSecrets) and, in GitHub Actions, the workflow
// annotations on errOut: out carries the report, and JSON must stay clean.
func (f Request) Write(out, errOut io.Writer, p *plan.Plan, color bool, chartRef string, hideSecrets bool) error {
	opts := f.Options(color)
	opts.ChartDir = ChartDir(chartRef)
	opts.HideSecrets = hideSecrets
	if err := Write(out, p, opts); err != nil {
		return err
	}
	if f.GitHubActions {
		return GitHubAnnotations(errOut, p)
	}
	return nil
}
