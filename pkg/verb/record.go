package verb

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/report"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/savedplan"
)

// recordRevision writes the record of the revision an apply of planned
// made (releasestate.RevisionRecord), once Helm returned and the rollout
// was watched: who ran it, the plan's classified changes and their
// acknowledgements in the report's masked forms, what was recreated, what
// Helm said (helm) and the outcome. It then prunes the records of
// revisions Helm no longer keeps (--history-max). The upgrade is done
// whatever happens here: a failure is a warning.
func (c *Config) recordRevision(ctx context.Context, planned *Planned, revision int, user, helm string) {
	if revision <= 0 {
		return
	}
	p := planned.Plan
	name, ns := p.Release.Name, p.Release.Namespace
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.recordTimeout())
	defer cancel()
	err := c.Stage("record", func() error {
		stored, err := c.Helm.Releases.Get(name, revision)
		if err != nil {
			return fmt.Errorf("reading revision %d back: %w", revision, err)
		}
		rec := &releasestate.RevisionRecord{Release: name, Namespace: ns, Revision: revision, Operation: string(p.Release.Op()),
			RollbackTo: p.Release.RollbackTo, ManifestDigest: releasestate.ManifestDigest(stored.Manifest), Recorded: c.Now().UTC(),
			By: c.who(user), Helm: c.Sanitizer.Text(helm, redact.RecordLimit)}
		for _, ch := range p.Changes {
			if ch.Action == plan.ActionUpdate && ch.Class == plan.ClassRecreateRequired && ch.Acknowledged {
				rec.Recreated = append(rec.Recreated, ch.ID.String())
			}
		}
		if rec.Summary, rec.Changes, rec.Outcome, err = report.RecordForm(p, 0); err != nil {
			return err
		}
		data, err := rec.Encode(report.WithoutDiffs)
		if err != nil {
			return err
		}
		if err := releasestate.WriteRevisionRecord(ctx, c.Cluster.Dynamic, rec, data); err != nil {
			return err
		}
		return c.pruneRecords(ctx, name, ns)
	})
	if err != nil {
		fmt.Fprintf(c.Out, "warning: release %q revision %d: %s; `log` computes its changes from the stored manifests instead\n", name, revision, c.Sanitizer.Text(err.Error(), redact.MessageLimit))
	}
}

// pruneRecords deletes the records of the revisions Helm's history no
// longer holds.
func (c *Config) pruneRecords(ctx context.Context, name, ns string) error {
	hist, err := releasestate.History(c.Helm.Releases, name)
	if err != nil {
		return fmt.Errorf("reading the history to prune the revision records: %w", err)
	}
	kept := map[int]bool{}
	for _, r := range hist {
		kept[r.Version] = true
	}
	gone, err := releasestate.PruneRevisionRecords(ctx, c.Cluster.Dynamic, ns, name, func(rev int) bool { return kept[rev] })
	if len(gone) > 0 {
		c.Logf("pruned the revision records of revisions %v (no longer in Helm's history)", gone)
	}
	return err
}

// newestDescription is the description of release's newest revision (""
// when it cannot be read): recordRecovery tells by it whether --recover
// settled that revision.
func (c *Config) newestDescription(name string) string {
	hist, err := releasestate.History(c.Helm.Releases, name)
	if err != nil || len(hist) == 0 || hist[0].Info == nil {
		return ""
	}
	return hist[0].Info.Description
}

// recordRecovery adds the --recover run that just settled the newest
// revision of release (its description, changed from before, says what it
// restored) to that revision's record; a failure is a warning.
func (c *Config) recordRecovery(ctx context.Context, name, user, before string) {
	hist, err := releasestate.History(c.Helm.Releases, name)
	if err == nil && (len(hist) == 0 || hist[0].Info == nil || hist[0].Info.Description == before ||
		!strings.HasPrefix(hist[0].Info.Description, recoverLinePrefix)) {
		return // nothing was settled (no journal, or the upgrade had finished)
	}
	if err == nil {
		err = c.addEvent(ctx, hist[0], plan.EventRecover, user, firstLine(hist[0].Info.Description))
	}
	if err != nil {
		fmt.Fprintf(c.Out, "warning: recording the recovery of release %q: %s\n", name, c.Sanitizer.Text(err.Error(), redact.MessageLimit))
	}
}

// recordUninstall keeps the records as Helm keeps its history: with
// --keep-history the uninstalled revision's record gains the uninstall
// (what it deleted: the plan's line); without, Helm removed every revision
// and the records go with them. A failure is a warning.
func (c *Config) recordUninstall(ctx context.Context, planned *PlannedUninstall, user string) {
	name := planned.Request.ReleaseName
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.recordTimeout())
	defer cancel()
	err := func() error {
		if !planned.Request.KeepHistory {
			return c.pruneRecords(ctx, name, c.Namespace)
		}
		rel, err := c.Helm.Releases.Get(name, planned.Plan.Release.CurrentRevision)
		if err != nil {
			return err
		}
		return c.addEvent(ctx, rel, plan.EventUninstall, user, report.AuditLine(planned.Plan, ""))
	}()
	if err != nil {
		fmt.Fprintf(c.Out, "warning: recording the uninstall of release %q: %s\n", name, c.Sanitizer.Text(err.Error(), redact.MessageLimit))
	}
}

// addEvent adds an event of kind, run by user, saying line, to the record
// of revision rel, creating the record when its apply left none (killed,
// or not applied by the tool).
func (c *Config) addEvent(ctx context.Context, rel *release.Release, kind, user, line string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.recordTimeout())
	defer cancel()
	digest := releasestate.ManifestDigest(rel.Manifest)
	recs, _, err := releasestate.ListRevisionRecords(ctx, c.Cluster.Dynamic, c.Namespace, rel.Name)
	if err != nil {
		return err
	}
	rec := recs[rel.Version]
	if rec == nil || rec.ManifestDigest != digest {
		rec = &releasestate.RevisionRecord{Release: rel.Name, Namespace: c.Namespace, Revision: rel.Version, ManifestDigest: digest}
	}
	rec.Events = append(rec.Events, plan.Event{Kind: kind, At: c.Now().UTC(), By: c.who(user),
		Line: c.Sanitizer.Text(line, redact.RecordLimit)})
	data, err := rec.Encode(report.WithoutDiffs)
	if err != nil {
		return err
	}
	return releasestate.WriteRevisionRecord(ctx, c.Cluster.Dynamic, rec, data)
}

// recoverLinePrefix starts the description --recover gives the revision
// it settled (pkg/apply's recoverRelease).
const recoverLinePrefix = "safe-upgrade --recover:"

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// who is who runs this apply: user (as the API server named them), the
// drop-in helm's caller, the command line without flag values, and in CI
// the commit and pipeline run.
func (c *Config) who(user string) plan.Who {
	ci := savedplan.ProvenanceFrom("", os.Getenv)
	return plan.Who{User: user, Caller: c.Caller, Command: c.Command, Commit: ci.Commit, Pipeline: ci.Pipeline}
}

// recordTimeout bounds writing a record: one request's bound, as the
// apply's own requests.
func (c *Config) recordTimeout() time.Duration {
	if c.RequestTimeout > 0 {
		return c.RequestTimeout
	}
	return 30 * time.Second
}

// appliedRevision is the revision an apply made and what Helm said of it:
// rel's when Helm succeeded; the stored revision Helm's failure left
// (failed), when it stored one; 0 when it stored none.
func appliedRevision(rel *release.Release, ue error, attempted int, status release.Status) (int, string) {
	switch {
	case ue == nil && rel != nil && rel.Info != nil:
		return rel.Version, "applied: " + rel.Info.Status.String()
	case ue != nil && status != "":
		return attempted, "failed: " + ue.Error()
	}
	return 0, ""
}
