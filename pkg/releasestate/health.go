package releasestate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// StateReader reads releases' recreate journals and Leases: a GET each
// (PerRelease), or from one LIST each (States, ReadStates).
type StateReader interface {
	CheckJournal(ctx context.Context, name, ns string) error
	ObserveLease(ctx context.Context, release, ns string, now time.Time) (*LeaseObservation, error)
}

// PerRelease reads a release's journal and Lease with a GET each: for a
// single release, where a LIST each would read more.
type PerRelease struct{ Cluster *live.Cluster }

// CheckJournal implements StateReader.
func (p PerRelease) CheckJournal(ctx context.Context, name, ns string) error {
	return CheckJournal(ctx, p.Cluster, name, ns)
}

// ObserveLease implements StateReader, without apply.
func (p PerRelease) ObserveLease(ctx context.Context, release, ns string, now time.Time) (*LeaseObservation, error) {
	return ObserveLease(ctx, p.Cluster, release, ns, false, now)
}

// ReadStatesFor is the StateReader of n releases of ns (every namespace
// with allNamespaces): a GET each for a single release (PerRelease), else
// one LIST each (ReadStates) rather than two GETs per release.
func ReadStatesFor(ctx context.Context, cluster *live.Cluster, n int, ns string, allNamespaces bool) StateReader {
	if n <= 1 {
		return PerRelease{Cluster: cluster}
	}
	if allNamespaces {
		ns = ""
	}
	return ReadStates(ctx, cluster, ns)
}

// Troubles is what is wrong with a release besides drift (`status`):
// Helm's status of its last revision when not deployed (current is the
// revision compared with the cluster), an unfinished recreate journal, a
// held Lease. Each line is sanitised: the errors quote the cluster.
func Troubles(ctx context.Context, states StateReader, current, last *release.Release, now time.Time, san *redact.Sanitizer) []string {
	var out []string
	name, ns := current.Name, current.Namespace
	if s := last.Info.Status; s != release.StatusDeployed {
		line := fmt.Sprintf("Helm status of revision %d is %s", last.Version, s)
		if d := last.Info.Description; d != "" {
			line += ": " + d
		}
		if current != last {
			line += fmt.Sprintf(" (compared with revision %d, the last deployed one)", current.Version)
		}
		out = append(out, line)
	}
	var journal *JournalError
	switch err := states.CheckJournal(ctx, name, ns); {
	case errors.As(err, &journal):
		out = append(out, "an interrupted apply left its recreate journal: "+err.Error())
	case err != nil:
		out = append(out, "the recreate journal could not be read: "+err.Error())
	}
	lease, err := states.ObserveLease(ctx, name, ns, now)
	switch {
	case err != nil:
		out = append(out, "the release's Lease could not be read: "+err.Error())
	case lease.Note() != "":
		out = append(out, lease.Note())
	}
	for i, l := range out {
		out[i] = san.Text(l, redact.MessageLimit)
	}
	return out
}
