package render

import (
	"fmt"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// Values of Options.ServerSide, Helm 4's --server-side.
const (
	ServerSideAuto  = "auto"
	ServerSideTrue  = "true"
	ServerSideFalse = "false"
)

// ValidateServerSide checks a --server-side value as Helm 4 does ("" is
// "auto").
func ValidateServerSide(v string) error {
	switch v {
	case "", ServerSideAuto, ServerSideTrue, ServerSideFalse:
		return nil
	}
	return fmt.Errorf("invalid --server-side %q: must be \"true\", \"false\" or \"auto\"", v)
}

// ServerSideApply reports whether the next revision is applied with
// server-side apply, as Helm 4's upgrade and rollback decide it
// (getUpgradeServerSideValue): "auto" keeps the method recorded in the last
// revision, or for a rollback the one recorded in the revision rolled back
// to (Helm 4's prepareRollback reads the target's). An install with "auto"
// stays client-side, as Helm 3 installs (Helm 4 would install server-side;
// see docs/helm4.md); --server-side=true asks for server-side.
func (r *Result) ServerSideApply(serverSide string) bool {
	switch serverSide {
	case ServerSideTrue:
		return true
	case ServerSideFalse:
		return false
	}
	method := r.ApplyMethod
	if r.RollbackTo > 0 {
		method = r.RollbackApplyMethod
	}
	return !r.Install && method == plan.ApplyMethodSSA
}

// CheckRollbackFlags refuses, for a rollback, the flags Helm would refuse:
// --server-side (true or false) and --force-conflicts on a release only
// Helm 3 wrote, whose `helm rollback` has neither flag, and
// --force-conflicts on a rollback applied client-side, which Helm 4's
// kube client refuses after it stored the new revision. Nothing is written
// before the refusal.
func (r *Result) CheckRollbackFlags(serverSide string, forceConflicts bool) error {
	if r.RollbackTo == 0 {
		return nil
	}
	name := r.Next.Name
	if r.helm3Only {
		switch {
		case serverSide == ServerSideTrue || serverSide == ServerSideFalse:
			return fmt.Errorf("--server-side=%s: release %q is a Helm 3 release (neither revision %d nor revision %d records Helm 4's apply method) and Helm 3's helm rollback has no --server-side; leave it out to roll back client-side, as Helm 3 does", serverSide, name, r.Last.Version, r.RollbackTo)
		case forceConflicts:
			return fmt.Errorf("--force-conflicts: release %q is a Helm 3 release (neither revision %d nor revision %d records Helm 4's apply method) and Helm 3's helm rollback has no --force-conflicts; leave it out", name, r.Last.Version, r.RollbackTo)
		}
	}
	if forceConflicts && !r.ServerSideApply(serverSide) {
		return fmt.Errorf("--force-conflicts: the rollback of release %q to revision %d applies client-side (%s), and Helm 4 refuses --force-conflicts without server-side apply; leave it out, or pass --server-side=true", name, r.RollbackTo, r.rollbackMethodWhy(serverSide))
	}
	return nil
}

// rollbackMethodWhy says why a rollback applies client-side.
func (r *Result) rollbackMethodWhy(serverSide string) string {
	if serverSide == ServerSideFalse {
		return "--server-side=false"
	}
	return fmt.Sprintf("--server-side=auto follows revision %d, which Helm did not apply server-side", r.RollbackTo)
}
