package releasestate

import (
	"context"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
)

// State is a release's stored state as a plan reads it, once, before it
// renders: what the plan, the render (through render.Stored: Revisions,
// Snapshot, Missing, Upgrade) and the apply then use without reading it
// again.
type State struct {
	// Lease is the release's Lease as read: the apply takes it on
	// condition that nobody took it since.
	Lease *LeaseObservation
	// History is the release's revisions, newest first, and From the
	// release an upgrade starts from (see ReadHistory); HistoryErr says why
	// the history could not be read (the render reports it where it
	// always has).
	History    []*release.Release
	From       *release.Release
	HistoryErr error
	// Recorded is the apply method Helm 4 recorded with the last revision,
	// nil when there is none to start from (no history, or uninstalled).
	Recorded *Recorded
}

// Recorded is the apply method Helm 4 recorded with revision Version, as
// RecordedApplyMethod read it: OK false when the storage cannot say, Err
// when reading it failed (the render reports it where it always has).
type Recorded struct {
	Version int
	Method  string
	OK      bool
	Err     error
}

// Read is a plan's one read of the release's stored state: it refuses while
// an interrupted apply's recreate journal holds objects (*JournalError: they
// come back with --recover before anything is planned against a cluster
// missing them), reads the Lease (refused, forApply, while another run
// holds it: ObserveLease), then the history from cfg's storage
// and the apply method recorded with its last revision (ReadRelease). It
// sends no write.
func Read(ctx context.Context, cluster *live.Cluster, cfg *action.Configuration, name, ns string, forApply bool, now time.Time) (*State, error) {
	return ReadStored(ctx, cluster, cfg, name, ns, ns, forApply, now)
}

// ReadStored is Read of a release whose records cfg's storage keeps in
// namespace storage rather than its namespace ns (helm-controller's
// storageNamespace): the record's apply method is read there.
func ReadStored(ctx context.Context, cluster *live.Cluster, cfg *action.Configuration, name, ns, storage string, forApply bool, now time.Time) (*State, error) {
	if err := CheckJournal(ctx, cluster, name, ns); err != nil {
		return nil, err
	}
	lease, err := ObserveLease(ctx, cluster, name, ns, forApply, now)
	if err != nil {
		return nil, err
	}
	s := ReadRelease(ctx, cfg, name, storage)
	s.Lease = lease
	return s, nil
}
