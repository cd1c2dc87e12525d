package plan

import (
	"strings"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

// Uninstalled is what an applied uninstall left, read back from the
// cluster after Helm's uninstall: each planned deletion gone or still
// there, and what the plan said stays.
type Uninstalled struct {
	// Failed is Helm's error, sanitised; "" when its uninstall succeeded.
	Failed string
	// Deleted are the planned deletions read back gone.
	Deleted []manifest.ObjectID
	// Remaining are the planned deletions still in the cluster, with why.
	Remaining []Remaining
	// Left is what the plan said the uninstall leaves, each with why
	// (the plan's "left in the cluster" notes).
	Left []string
}

// Remaining is a planned deletion still in the cluster after the uninstall.
type Remaining struct {
	ID manifest.ObjectID
	// Why: "Terminating since …", "not deleted", or changed since the plan.
	Why string
	// Finalizers are those that hold it.
	Finalizers []string
}

// OK reports whether Helm's uninstall succeeded and every planned deletion
// is gone.
func (u *Uninstalled) OK() bool { return u != nil && u.Failed == "" && len(u.Remaining) == 0 }

// String is the line that names it: "KIND/NS/NAME: why, held by the
// finalizer(s) …".
func (r Remaining) String() string {
	s := r.ID.String() + ": " + r.Why
	if len(r.Finalizers) > 0 {
		s += ", held by the finalizer(s) " + strings.Join(r.Finalizers, ", ")
	}
	return s
}
