package verb

import (
	"fmt"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/report"
)

// A release record that cannot be read (over its bound, not JSON, a wrong
// type: releasestate.DecodeRecord) is named, never dropped: Helm's own
// drivers skip it, and a release whose every record is broken would
// vanish from `status -A` and read "not found" by name.

// statusUnreadable sorts the unreadable records of status -A: a record
// newer than the revision a target compares with goes with that release
// as a release of its own, unplanned (what is deployed is not known); an
// older one is a health line of the target, which is planned. Either way
// the release is never in sync (plan.ReleaseStatus.Unreadable).
func (c *Config) statusUnreadable(targets []*statusTarget, unreadable []*releasestate.UnreadableError) ([]*statusTarget, []plan.ReleaseStatus) {
	if len(unreadable) == 0 {
		return targets, nil
	}
	byRelease := map[[2]string][]*releasestate.UnreadableError{}
	for _, u := range unreadable {
		k := [2]string{u.Namespace, releaseOfRecord(u)}
		byRelease[k] = append(byRelease[k], u)
	}
	kept := targets[:0]
	for _, t := range targets {
		k := [2]string{t.Current.Namespace, t.Current.Name}
		recs := byRelease[k]
		newer := slices.ContainsFunc(recs, func(u *releasestate.UnreadableError) bool { return u.Revision == 0 || u.Revision > t.Last.Version })
		if newer {
			continue // shown unplanned below
		}
		delete(byRelease, k)
		t.unreadable = recs
		kept = append(kept, t)
	}
	keys := make([][2]string, 0, len(byRelease))
	for k := range byRelease {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+"/"+a[1], b[0]+"/"+b[1]) })
	broken := make([]plan.ReleaseStatus, 0, len(keys))
	for _, k := range keys {
		recs := byRelease[k]
		rs := plan.ReleaseStatus{Name: c.Sanitizer.Text(k[1], redact.NameLimit), Namespace: k[0], HelmStatus: "unreadable",
			Chart: "unknown", Unreadable: true, Health: c.unreadableLines(recs)}
		for _, u := range recs {
			rs.Revision = max(rs.Revision, u.Revision)
		}
		rs.Last = rs.Revision
		broken = append(broken, rs)
	}
	return kept, broken
}

// releaseOfRecord is the release a record's labels name, else its key.
func releaseOfRecord(u *releasestate.UnreadableError) string {
	if u.Name != "" {
		return u.Name
	}
	return u.Key
}

// unreadableLines say, for each record, which revision cannot be read
// and why, through the sanitiser (the why never quotes the record, the
// key and labels are the API server's names, but every text from the
// cluster is printed one way).
func (c *Config) unreadableLines(recs []*releasestate.UnreadableError) []string {
	slices.SortFunc(recs, func(a, b *releasestate.UnreadableError) int { return b.Revision - a.Revision })
	out := make([]string, len(recs))
	for i, u := range recs {
		out[i] = c.Sanitizer.Text(fmt.Sprintf("revision %d: the release record %s is unreadable: %s", u.Revision, u.Key, u.Why), redact.MessageLimit)
	}
	return out
}

// unreadableEntry is the log's entry of a revision whose record cannot
// be read: its number, and why.
func (c *Config) unreadableEntry(u *releasestate.UnreadableError) report.LogEntry {
	return report.LogEntry{Revision: u.Revision, Status: "unreadable", Chart: "unknown",
		Notes: c.unreadableLines([]*releasestate.UnreadableError{u})}
}

// unreadableBetween is the newest unreadable revision between prev and
// rel (0 when none): rel's changes are then computed from prev's
// manifest, not from the revision just before it.
func unreadableBetween(unreadable []*releasestate.UnreadableError, prev, rel *release.Release) int {
	for _, u := range unreadable {
		if u.Revision < rel.Version && (prev == nil || u.Revision > prev.Version) {
			return u.Revision
		}
	}
	return 0
}
