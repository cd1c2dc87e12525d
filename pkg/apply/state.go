package apply

import (
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
)

// ErrStale is matched (errors.Is) by the error Apply returns when the
// release's history changed between the plan and the apply.
var ErrStale = errors.New("the plan is stale")

// StaleError says that the release moved since the plan: another install,
// upgrade, rollback or uninstall happened in between. Helm wrote nothing;
// when the recreate step had deleted objects already, Apply wraps it in an
// error that names them and their restore.
type StaleError struct {
	Name, Namespace string
	// Planned is the last revision when the plan was made (0: none), and
	// PlannedStatus its status; Current and CurrentStatus are the same now.
	Planned, Current             int
	PlannedStatus, CurrentStatus release.Status
}

func (e *StaleError) Error() string {
	switch {
	case e.Planned == 0:
		return fmt.Sprintf("release %q in namespace %s was installed (revision %d, %s) since the plan; plan again",
			e.Name, e.Namespace, e.Current, e.CurrentStatus)
	case e.Current == 0:
		return fmt.Sprintf("release %q in namespace %s was removed since the plan (it was at revision %d); plan again",
			e.Name, e.Namespace, e.Planned)
	case e.Planned == e.Current:
		return fmt.Sprintf("release %q in namespace %s: revision %d went from %s to %s since the plan; plan again",
			e.Name, e.Namespace, e.Current, e.PlannedStatus, e.CurrentStatus)
	}
	return fmt.Sprintf("release %q in namespace %s moved from revision %d to %d since the plan; plan again",
		e.Name, e.Namespace, e.Planned, e.Current)
}

// Unwrap makes errors.Is(err, ErrStale) true.
func (e *StaleError) Unwrap() error { return ErrStale }

// UpgradeError is returned when Helm's upgrade (or install) ran and failed.
// Helm's own failure handling has been applied (the revision marked failed,
// --atomic rolled back); the fields say where the release stands now, as
// read back from the release storage after the failure.
type UpgradeError struct {
	Name, Namespace string
	// Attempted is the revision the apply tried to create; AttemptedStatus
	// its stored status ("" when Helm failed before storing it).
	Attempted       int
	AttemptedStatus release.Status
	// Last is the newest revision now and LastStatus its status (0 and ""
	// when the release has no history any more, e.g. after an atomic
	// install was uninstalled, or when it could not be read: see ReadErr).
	Last       int
	LastStatus release.Status
	// RolledBackTo is the revision Helm's rollback (--atomic) returned
	// to, when the newest revision is that rollback; 0 otherwise.
	RolledBackTo int
	// ReadErr is the error reading the storage back, if any.
	ReadErr error
	// Err is Helm's error.
	Err error
	// Recreate says what the recreate step deleted and what was restored
	// after the failure ("" when nothing was recreated).
	Recreate string
}

func (e *UpgradeError) Error() string {
	msg := e.state()
	if e.Recreate != "" {
		msg += "; " + e.Recreate
	}
	return msg
}

func (e *UpgradeError) state() string {
	msg := fmt.Sprintf("release %q in namespace %s: applying revision %d failed: %v", e.Name, e.Namespace, e.Attempted, e.Err)
	switch {
	case e.ReadErr != nil:
		return msg + fmt.Sprintf("; the release state could not be read back (%v): check it with: helm history %s -n %s", e.ReadErr, e.Name, e.Namespace)
	case e.Last == 0:
		return msg + "; the release has no revision any more"
	case e.Last == e.Attempted:
		return msg + fmt.Sprintf("; the release is now %s at revision %d", e.LastStatus, e.Last)
	case e.AttemptedStatus == "":
		return msg + fmt.Sprintf("; revision %d was not stored; the release is %s at revision %d", e.Attempted, e.LastStatus, e.Last)
	}
	msg += fmt.Sprintf("; revision %d is %s; the release is now %s at revision %d", e.Attempted, e.AttemptedStatus, e.LastStatus, e.Last)
	if e.RolledBackTo > 0 {
		msg += fmt.Sprintf(": Helm's --atomic rolled the release back to revision %d", e.RolledBackTo)
	}
	return msg
}

// Unwrap returns Helm's error.
func (e *UpgradeError) Unwrap() error { return e.Err }

// checkRelease refuses a release that is pending or that moved since the
// plan: planned is the last revision the plan saw (nil: none).
func checkRelease(store *storage.Storage, name, ns string, planned *release.Release) error {
	hist, err := releasestate.History(store, name)
	if err != nil {
		return fmt.Errorf("release %q in namespace %s: reading its history: %w", name, ns, err)
	}
	if err := releasestate.CheckPending(hist, name, ns); err != nil {
		return err
	}
	var last *release.Release
	if len(hist) > 0 {
		last = hist[0]
	}
	stale := &StaleError{Name: name, Namespace: ns}
	if planned != nil {
		stale.Planned, stale.PlannedStatus = planned.Version, planned.Info.Status
	}
	if last != nil {
		stale.Current, stale.CurrentStatus = last.Version, last.Info.Status
	}
	if stale.Planned != stale.Current || stale.PlannedStatus != stale.CurrentStatus {
		return stale
	}
	return nil
}

// failure reads the release back after Helm's action failed with err.
func failure(store *storage.Storage, name, ns string, attempted int, err error) *UpgradeError {
	ue := &UpgradeError{Name: name, Namespace: ns, Attempted: attempted, Err: err}
	hist, rerr := releasestate.History(store, name)
	if rerr != nil {
		ue.ReadErr = rerr
		return ue
	}
	for _, r := range hist {
		if r.Version == attempted {
			ue.AttemptedStatus = r.Info.Status
		}
	}
	if len(hist) > 0 {
		ue.Last, ue.LastStatus = hist[0].Version, hist[0].Info.Status
		ue.RolledBackTo = releasestate.RolledBackTo(hist[0], attempted)
	}
	return ue
}
