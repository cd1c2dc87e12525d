package releasestate

import (
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/release"
)

// ErrReleasePending is matched (errors.Is) by the error a render returns when
// the last revision of the release is pending-install, pending-upgrade or
// pending-rollback.
var ErrReleasePending = errors.New("release has an operation in progress")

// PendingError says that the last revision of a release is in a pending
// state: another install, upgrade or rollback is running or was interrupted.
type PendingError struct {
	Name, Namespace string
	Revision        int
	Status          release.Status
	// RollbackTo is the newest deployed or superseded revision, 0 if none.
	RollbackTo int
}

func (e *PendingError) Error() string {
	msg := fmt.Sprintf("release %q in namespace %s is %s at revision %d: another install/upgrade/rollback is in progress or was interrupted; wait for it to finish", e.Name, e.Namespace, e.Status, e.Revision)
	if e.RollbackTo > 0 {
		return msg + fmt.Sprintf(", or if none is running, return to revision %d with: helm rollback %s %d -n %s", e.RollbackTo, e.Name, e.RollbackTo, e.Namespace)
	}
	return msg + fmt.Sprintf(", or if none is running, there is no earlier revision to roll back to: remove it with: helm uninstall %s -n %s", e.Name, e.Namespace)
}

// Unwrap makes errors.Is(err, ErrReleasePending) true.
func (e *PendingError) Unwrap() error { return ErrReleasePending }

// CheckPending returns a *PendingError when the newest revision in hist
// (newest first) is pending-install, -upgrade or -rollback.
func CheckPending(hist []*release.Release, name, ns string) error {
	if len(hist) == 0 || !hist[0].Info.Status.IsPending() {
		return nil
	}
	pe := &PendingError{Name: name, Namespace: ns, Revision: hist[0].Version, Status: hist[0].Info.Status}
	for _, r := range hist {
		if r.Info.Status == release.StatusDeployed || r.Info.Status == release.StatusSuperseded {
			pe.RollbackTo = r.Version
			break
		}
	}
	return pe
}
