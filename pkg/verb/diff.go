package verb

import (
	"context"
	"fmt"

	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// DiffRequest is `diff RELEASE REV1 REV2`: what going from revision From
// to revision To of the release changes, classified.
type DiffRequest struct {
	ReleaseName string
	From, To    int
}

// DiffRevisions classifies what changes from revision req.From's stored
// manifest to revision req.To's, offline, as log computes a revision made
// by plain helm (revisionPlan): helm-diff's `diff revision` with verdicts.
// Either order is allowed (a diff back to an older revision is what a
// rollback to it would change, live state aside). It sends no write.
func (c *Config) DiffRevisions(ctx context.Context, req DiffRequest) (*plan.Plan, error) {
	hist, unreadable, _, err := c.readRevisions(ctx, req.ReleaseName)
	if err != nil {
		return nil, err
	}
	from, to := findRevision(hist, req.From), findRevision(hist, req.To)
	for _, r := range []struct {
		rev int
		rel *release.Release
	}{{req.From, from}, {req.To, to}} {
		for _, u := range unreadable {
			if u.Revision == r.rev {
				return nil, u
			}
		}
		if r.rel == nil && len(hist) == 0 {
			return nil, fmt.Errorf("release %q in namespace %s has no revision %d whose record can be read", req.ReleaseName, c.Namespace, r.rev)
		}
		if r.rel == nil {
			return nil, fmt.Errorf("release %q in namespace %s has no revision %d (Helm keeps %s)", req.ReleaseName, c.Namespace, r.rev, revisionsKept(hist))
		}
	}
	p, err := c.revisionPlan(ctx, from, to)
	if err != nil {
		return nil, err
	}
	// The plan compares two stored revisions, not one with the live
	// objects: its operation is neither's, its revisions both.
	p.Release.Operation, p.Release.RollbackTo = plan.OperationUpgrade, 0
	p.Release.CurrentRevision, p.Release.Revision = req.From, req.To
	p.Notes = append(p.Notes, fmt.Sprintf("revision %d -> revision %d: computed from the manifests Helm stored for them (base: revision %d, head: revision %d), without the live objects", req.From, req.To, req.From, req.To))
	return p, nil
}

func findRevision(hist []*release.Release, rev int) *release.Release {
	for _, r := range hist {
		if r.Version == rev {
			return r
		}
	}
	return nil
}

// revisionsKept names the revisions of hist (newest first): "1 to 5", or
// the list when there are gaps.
func revisionsKept(hist []*release.Release) string {
	first, last := hist[len(hist)-1].Version, hist[0].Version
	if last-first+1 == len(hist) {
		return fmt.Sprintf("revisions %d to %d", first, last)
	}
	s := "revisions"
	for i := len(hist) - 1; i >= 0; i-- {
		s += fmt.Sprintf(" %d", hist[i].Version)
	}
	return s
}
