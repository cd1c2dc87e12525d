package render

import (
	"fmt"

	"helm.sh/helm/v3/pkg/release"
)

// Revision is a stored revision with the apply method Helm 4 recorded
// with it: Method ("" in a record Helm 3 wrote), Known false when the
// storage cannot say.
type Revision struct {
	*release.Release
	Method string
	Known  bool
}

// Rollback returns, as a Result, what `helm rollback` applies going from
// revision last to revision target, as the caller read them
// (releasestate.ReadRollback): no render, but target made the next
// revision, exactly as Helm 3.22's prepareRollback builds it
// (pkg/action/rollback.go), so that the planner compares it with the live
// objects as it does a render, and the apply hands it to Helm's rollback
// action. storage names the release storage (HELM_DRIVER), for a warning.
//
// As there, the current release is the last revision whatever its status
// (a failed upgrade's included): its Manifest is the "original" of the
// three-way patches and its objects missing from the target are deleted;
// the new revision is the last one plus one, with the target's chart,
// values, manifest, hooks, notes and labels, and the description
// "Rollback to VERSION". RollbackTo is the target's version; Chart and
// Values are the target's; ApplyMethod is the last revision's recorded
// apply method and RollbackApplyMethod the target's, which Helm 4's
// rollback follows under --server-side=auto (Result.ServerSideApply).
func Rollback(last, target Revision, storage string) *Result {
	current := last.Release
	info := &release.Info{
		FirstDeployed: current.Info.FirstDeployed,
		Status:        release.StatusPendingRollback,
		Description:   fmt.Sprintf("Rollback to %d", target.Version),
	}
	if target.Info != nil {
		info.Notes = target.Info.Notes
	}
	next := &release.Release{
		Name:      current.Name,
		Namespace: current.Namespace,
		Chart:     target.Chart,
		Config:    target.Config,
		Info:      info,
		Version:   current.Version + 1,
		Labels:    target.Labels,
		Manifest:  target.Manifest,
		Hooks:     target.Hooks,
	}
	res := &Result{Previous: current, Last: current, Next: next, ApplyMethod: last.Method,
		Chart: target.Chart, Values: target.Config, RollbackTo: target.Version,
		RollbackApplyMethod: target.Method, helm3Only: last.Known && target.Known && last.Method == "" && target.Method == ""}
	if !target.Known {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the apply method Helm 4 records cannot be read from the %s release storage: under --server-side=auto the rollback is planned as client-side; pass --server-side=true if Helm 4 applied revision %d server-side", storage, target.Version))
	}
	return res
}
