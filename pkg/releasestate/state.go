package releasestate

import (
	"context"
	"time"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
)

// State is a release's stored state as a plan reads it, once, before it
// renders: what the plan, the render and the apply then use without
// reading it again.
type State struct {
	// Lease is the release's Lease as read: the apply takes it on
	// condition that nobody took it since.
	Lease *LeaseObservation
	// History is the release's revisions, newest first, and From the
	// release an upgrade starts from (see ReadHistory); HistoryErr says why
	// the history could not be read (the render reads it again and
	// reports it where it always has).
	History    []*release.Release
	From       *release.Release
	HistoryErr error
}

// Read is a plan's one read of the release's stored state: it refuses while
// an interrupted apply's recreate journal holds objects (*JournalError: they
// come back with --recover before anything is planned against a cluster
// missing them), reads the Lease (refused, forApply, while another run
// holds it: ObserveLease) and then the history from store (ReadHistory).
// It sends no write.
func Read(ctx context.Context, cluster *live.Cluster, store *storage.Storage, name, ns string, forApply bool, now time.Time) (*State, error) {
	if err := CheckJournal(ctx, cluster, name, ns); err != nil {
		return nil, err
	}
	lease, err := ObserveLease(ctx, cluster, name, ns, forApply, now)
	if err != nil {
		return nil, err
	}
	s := &State{Lease: lease}
	s.History, s.From, s.HistoryErr = ReadHistory(store, name)
	return s, nil
}
