// Package releasestate is the one home of a release's stored state: Helm's
// history and release records as stored (history.go, pending.go,
// record.go, storage.go), the pending revision, the release's Lease (one
// lifecycle every writing verb uses: lease.go), the recreate journal
// (journal.go), and what is chosen from them: what a render starts from
// and the read-only storage it runs on (from.go, snapshot.go), the
// revision a rollback goes back to (rollback.go), the revision status
// compares the live objects with (targets.go). It reads the cluster through live; apply writes the
// journal and the records through what it exposes. It imports no stage
// that uses it (test/arch).
package releasestate

import (
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

// History returns the revisions of release name, newest first; none (and no
// error) when it does not exist.
func History(store *storage.Storage, name string) ([]*release.Release, error) {
	hist, err := store.History(name)
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, err
	}
	releaseutil.Reverse(hist, releaseutil.SortByRevision)
	return hist, nil
}

// HistoryReadable is History that goes on past records that cannot be
// read: the revisions that can (newest first), and the others, named
// (for `log`, which shows each as unreadable). err is any other error.
func HistoryReadable(store *storage.Storage, name string) (hist []*release.Release, unreadable []*UnreadableError, err error) {
	hist, err = store.History(name)
	if unreadable = Unreadables(err); len(unreadable) > 0 {
		err = nil
	}
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil, err
	}
	releaseutil.Reverse(hist, releaseutil.SortByRevision)
	return hist, unreadable, nil
}

// ReadHistory reads the history of release name from store once, before
// rendering (the render can then read the same revisions from memory:
// Snapshot), with the release an upgrade would start from (nil when
// there is none: an install, or a history the render refuses). On error,
// the render reports the error where it always has.
func ReadHistory(store *storage.Storage, name string) (hist []*release.Release, from *release.Release, err error) {
	if store == nil {
		return nil, nil, nil
	}
	if hist, err = History(store, name); err != nil {
		return nil, nil, err
	}
	if len(hist) == 0 || hist[0].Info.Status == release.StatusUninstalled || CheckPending(hist, name, "") != nil {
		return hist, nil, nil
	}
	return hist, Current(hist), nil
}

// Current mirrors Helm's prepareUpgrade: the last revision when it is
// deployed, else the newest deployed one, else the last one when it failed
// or was superseded. hist is sorted newest first.
func Current(hist []*release.Release) *release.Release {
	last := hist[0]
	for _, r := range hist {
		if r.Info.Status == release.StatusDeployed {
			return r
		}
	}
	if last.Info.Status == release.StatusFailed || last.Info.Status == release.StatusSuperseded {
		return last
	}
	return nil
}

// LastDeployed is the newest deployed revision of hist (newest first), nil
// when there is none.
func LastDeployed(hist []*release.Release) *release.Release {
	for _, r := range hist {
		if r.Info != nil && r.Info.Status == release.StatusDeployed {
			return r
		}
	}
	return nil
}

// DeployedOf reads the objects of release name's last deployed revision
// from Helm's release storage, and that revision's number.
func DeployedOf(store *storage.Storage, name, ns string, scoper manifest.Scoper) (*manifest.Set, int, error) {
	hist, err := History(store, name)
	if err != nil {
		return nil, 0, fmt.Errorf("release %q in namespace %s: reading its history: %w", name, ns, err)
	}
	rel := LastDeployed(hist)
	if rel == nil {
		return nil, 0, fmt.Errorf("release %q in namespace %s has no deployed revision: what a recreate deletes could not be checked against it", name, ns)
	}
	set, err := manifest.Split(fmt.Sprintf("manifest of revision %d", rel.Version), rel.Manifest, ns, scoper)
	if err != nil {
		return nil, 0, fmt.Errorf("release %q in namespace %s: reading the manifest of the deployed revision %d: %w", name, ns, rel.Version, err)
	}
	return set, rel.Version, nil
}

// RolledBackTo is the revision rel, a record newer than the attempted
// one, rolled back to (RollbackOf). 0 when rel is not such a rollback.
func RolledBackTo(rel *release.Release, attempted int) int {
	if rel.Version <= attempted {
		return 0
	}
	return RollbackOf(rel)
}

// RollbackOf is the revision rel's description says Helm's rollback went
// back to: Helm describes a rollback as "Rollback to N" (both Helm 3 and
// 4). 0 for any other revision.
func RollbackOf(rel *release.Release) int {
	var to int
	if rel.Info == nil {
		return 0
	}
	if _, err := fmt.Sscanf(rel.Info.Description, "Rollback to %d", &to); err != nil {
		return 0
	}
	return to
}
