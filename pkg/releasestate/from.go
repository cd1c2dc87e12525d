package releasestate

import (
	"context"
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// What a render starts from: the release's stored state read once
// (ReadRelease), handed to the render (render.Stored), which reads no
// release state itself.

// ErrReleaseNotFound is matched (errors.Is) by the error a render or a
// verb returns when the release does not exist (and, for an upgrade,
// --install was not given).
var ErrReleaseNotFound = errors.New("release not found")

// ReleaseNotFoundError says that a release does not exist (or that all its
// revisions were uninstalled with --keep-history) and --install was not given.
type ReleaseNotFoundError struct {
	Name, Namespace string
	// Uninstalled is true when the history exists but its last revision is
	// uninstalled.
	Uninstalled bool
}

func (e *ReleaseNotFoundError) Error() string {
	if e.Uninstalled {
		return fmt.Sprintf("release %q in namespace %s was uninstalled; use --install to install it again", e.Name, e.Namespace)
	}
	return fmt.Sprintf("release %q not found in namespace %s; use --install to install it", e.Name, e.Namespace)
}

// Unwrap makes errors.Is(err, ErrReleaseNotFound) true.
func (e *ReleaseNotFoundError) Unwrap() error { return ErrReleaseNotFound }

// ReadRelease reads the history of release name from cfg's storage
// (ReadHistory) and the apply method Helm 4 recorded with its last
// revision, in namespace storage (RecordedApplyMethod): what a render
// starts from. It reads neither the journal nor the Lease (Read does).
func ReadRelease(ctx context.Context, cfg *action.Configuration, name, storage string) *State {
	s := &State{}
	if cfg == nil {
		return s
	}
	s.History, s.From, s.HistoryErr = ReadHistory(cfg.Releases, name)
	if len(s.History) > 0 && s.History[0].Info.Status != release.StatusUninstalled {
		r := recordedWith(ctx, cfg, storage, s.History[0])
		s.Recorded = &r
	}
	return s
}

// recordedWith is the apply method Helm 4 recorded with rel, read from
// cfg's storage in namespace ns (RecordedApplyMethod).
func recordedWith(ctx context.Context, cfg *action.Configuration, ns string, rel *release.Release) Recorded {
	r := Recorded{Version: rel.Version}
	r.Method, r.OK, r.Err = RecordedApplyMethod(ctx, cfg, ns, rel)
	return r
}

// Revisions is the release's history, newest first, or why it could not
// be read.
func (s *State) Revisions() ([]*release.Release, error) { return s.History, s.HistoryErr }

// Snapshot is cfg with a read-only release storage holding the history
// and the apply method recorded with its last revision (Snapshot).
func (s *State) Snapshot(cfg *action.Configuration) *action.Configuration {
	return Snapshot(cfg, s.History, s.Recorded)
}

// Missing is the refusal of an upgrade, without --install, of release
// name in ns, which does not exist or whose every revision was
// uninstalled.
func (s *State) Missing(name, ns string) error {
	return &ReleaseNotFoundError{Name: name, Namespace: ns, Uninstalled: len(s.History) > 0}
}

// Upgrade is what an upgrade of release name in ns starts from: the
// revision Helm's prepareUpgrade takes (Current), and the apply method
// Helm 4 recorded with the last revision (known false: the storage cannot
// say). It refuses a history whose last revision is pending
// (*PendingError), whose apply method could not be read, or with no
// revision to upgrade from. The history holds a revision that is not
// uninstalled.
func (s *State) Upgrade(name, ns string) (from *release.Release, method string, known bool, err error) {
	if err := CheckPending(s.History, name, ns); err != nil {
		return nil, "", false, err
	}
	if r := s.Recorded; r != nil {
		method, known, err = r.Method, r.OK, r.Err
	}
	if err != nil {
		return nil, "", false, fmt.Errorf("release %q in namespace %s: reading its apply method: %w", name, ns, err)
	}
	if from = Current(s.History); from == nil {
		last := s.History[0]
		return nil, "", false, fmt.Errorf("release %q in namespace %s: last revision %d is %s and no revision is deployed: %w",
			name, ns, last.Version, last.Info.Status, driver.ErrNoDeployedReleases)
	}
	return from, method, known, nil
}
