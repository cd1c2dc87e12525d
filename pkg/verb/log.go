package verb

import (
	"context"
	"fmt"
	"slices"

	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/report"
)

// LogRequest is `log RELEASE`: the newest MaxCount revisions (0: all Helm
// keeps).
type LogRequest struct {
	ReleaseName string
	MaxCount    int
}

// Log is the release's revisions, newest first, each with what the tool
// recorded when it made it (releasestate.RevisionRecord) or, for a
// revision it did not make (plain helm, or before the tool), the changes
// computed offline from the stored manifests of the revision before and
// its own, marked computed. It reads Helm's history and the records with
// one LIST each and sends no write.
func (c *Config) Log(ctx context.Context, req LogRequest) ([]report.LogEntry, error) {
	hist, unreadable, records, err := c.readRevisions(ctx, req.ReleaseName)
	if err != nil {
		return nil, err
	}
	var entries []report.LogEntry
	for i := 0; i < len(hist) || len(unreadable) > 0; {
		if req.MaxCount > 0 && len(entries) == req.MaxCount {
			break
		}
		// An unreadable revision is shown in its place and the log goes on.
		if len(unreadable) > 0 && (i == len(hist) || unreadable[0].Revision > hist[i].Version) {
			entries = append(entries, c.unreadableEntry(unreadable[0]))
			unreadable = unreadable[1:]
			continue
		}
		var prev *release.Release
		if i+1 < len(hist) {
			prev = hist[i+1]
		}
		e, err := c.logEntry(ctx, prev, hist[i], records[hist[i].Version])
		if err != nil {
			return nil, err
		}
		if skipped := unreadableBetween(unreadable, prev, hist[i]); skipped > 0 && e.Computed {
			from := "as a first install"
			if prev != nil {
				from = fmt.Sprintf("from revision %d's manifest", prev.Version)
			}
			e.Notes = append(e.Notes, fmt.Sprintf("computed %s: revision %d's record is unreadable", from, skipped))
		}
		entries = append(entries, e)
		i++
	}
	return entries, nil
}

// readRevisions reads the history of release (newest first; an error when
// there is none), the revisions whose record cannot be read (newest
// first) and the tool's records of it, and teaches the sanitiser every
// stored revision's Secret values, which descriptions and records must
// not show.
func (c *Config) readRevisions(ctx context.Context, name string) ([]*release.Release, []*releasestate.UnreadableError, map[int]*releasestate.RevisionRecord, error) {
	if err := c.Connect(ctx); err != nil {
		return nil, nil, nil, err
	}
	hist, unreadable, err := releasestate.HistoryReadable(c.Helm.Releases, name)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("release %q in namespace %s: reading its history: %w", name, c.Namespace, err)
	}
	if len(hist) == 0 && len(unreadable) == 0 {
		return nil, nil, nil, fmt.Errorf("release %q in namespace %s: %w", name, c.Namespace, releasestate.ErrReleaseNotFound)
	}
	slices.SortFunc(unreadable, func(a, b *releasestate.UnreadableError) int { return b.Revision - a.Revision })
	for _, r := range hist {
		c.Sanitizer.AddManifest(r.Manifest)
		for _, h := range r.Hooks {
			c.Sanitizer.AddManifest(h.Manifest)
		}
	}
	records, bad, err := releasestate.ListRevisionRecords(ctx, c.Cluster.Dynamic, c.Namespace, name)
	if err != nil {
		// The log still stands on Helm's history: every entry computed.
		fmt.Fprintf(c.Out, "warning: %s; every revision's changes are computed\n", c.Sanitizer.Text(err.Error(), redact.MessageLimit))
	}
	for _, b := range bad {
		fmt.Fprintf(c.Out, "warning: a revision record is ignored: %s\n", c.Sanitizer.Text(b, redact.MessageLimit))
	}
	return hist, unreadable, records, nil
}

// logEntry is rel's entry: its record's when rec is one of exactly rel's
// manifest, else computed from prev's manifest and rel's.
func (c *Config) logEntry(ctx context.Context, prev, rel *release.Release, rec *releasestate.RevisionRecord) (report.LogEntry, error) {
	e := report.LogEntry{Revision: rel.Version, Chart: c.Sanitizer.Text(chartRef(rel.Chart), redact.NameLimit)}
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		e.AppVersion = c.Sanitizer.Text(rel.Chart.Metadata.AppVersion, redact.NameLimit)
	}
	if rel.Info != nil {
		e.Updated = rel.Info.LastDeployed.Time
		e.Status = rel.Info.Status.String()
		e.Description = c.Sanitizer.Record(rel.Info.Description, redact.RecordLimit)
	}
	if rec != nil && rec.ManifestDigest != releasestate.ManifestDigest(rel.Manifest) {
		e.Why = "its record names another manifest than Helm's (written before Helm stored this revision, or not by this tool): ignored"
		rec = nil
	}
	if rec != nil {
		c.fromRecord(&e, rec)
		if rec.Summary != nil {
			return e, nil
		}
		e.Why = "the apply did not record its changes (interrupted)"
	}
	p, err := c.revisionPlan(ctx, prev, rel)
	if err != nil {
		return e, fmt.Errorf("revision %d: computing its changes from the stored manifests: %w", rel.Version, err)
	}
	e.Computed = true
	if e.Operation == "" {
		e.Operation = string(p.Release.Op())
		e.RollbackTo = p.Release.RollbackTo
	}
	if e.Summary, e.Changes, _, err = report.RecordForm(p, 0); err != nil {
		return e, fmt.Errorf("revision %d: %w", rel.Version, err)
	}
	return e, nil
}

// fromRecord fills e from rec, every text through the sanitiser: a record
// is a ConfigMap anyone who may write them in the namespace can write.
func (c *Config) fromRecord(e *report.LogEntry, rec *releasestate.RevisionRecord) {
	text := func(s string) string { return c.Sanitizer.Text(s, redact.RecordLimit) }
	who := func(w plan.Who) plan.Who {
		return plan.Who{User: text(w.User), Caller: text(w.Caller), Command: text(w.Command), Tool: text(w.Tool),
			Commit: text(w.Commit), Pipeline: text(w.Pipeline)}
	}
	e.Operation, e.RollbackTo = text(rec.Operation), rec.RollbackTo
	e.By, e.Helm = who(rec.By), text(rec.Helm)
	e.Summary = c.Sanitizer.JSON(rec.Summary)
	e.Changes = c.Sanitizer.JSON(rec.Changes)
	e.Outcome = c.Sanitizer.JSON(rec.Outcome)
	for _, r := range rec.Recreated {
		e.Recreated = append(e.Recreated, text(r))
	}
	for _, ev := range rec.Events {
		e.Events = append(e.Events, plan.Event{Kind: text(ev.Kind), At: ev.At, By: who(ev.By), Line: text(ev.Line)})
	}
	for _, n := range rec.Notes {
		e.Notes = append(e.Notes, text(n))
	}
}

// revisionPlan classifies what going from prev's stored manifest to rel's
// changed, offline (the planner's catalogue, as --from-manifest): the two
// manifests are what Helm applied, so no render and no cluster are needed.
// prev nil: rel installed everything.
func (c *Config) revisionPlan(ctx context.Context, prev, rel *release.Release) (*plan.Plan, error) {
	in := planner.Input{
		Release: plan.Release{Name: rel.Name, Namespace: rel.Namespace, Revision: rel.Version, Chart: chartRef(rel.Chart),
			Operation: plan.InstallOrUpgrade(prev == nil)},
		NextManifest: rel.Manifest,
		Hooks:        hookManifests(rel.Hooks),
	}
	if to := releasestate.RollbackOf(rel); to > 0 {
		in.Release.Operation, in.Release.RollbackTo = plan.OperationRollback, to
	}
	if prev != nil {
		in.PreviousManifest, in.PreviousHooks = prev.Manifest, hookManifests(prev.Hooks)
		in.Release.CurrentRevision = prev.Version
	}
	in.PreviousName = "revision " + fmt.Sprint(in.Release.CurrentRevision)
	offline := planner.Offline{Release: rel.Name, Namespace: rel.Namespace}
	return c.planner(offline.Parts(), "").Plan(ctx, in)
}
