package render

import (
	"context"
	"fmt"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
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
// server-side apply, as Helm 4's upgrade decides it
// (getUpgradeServerSideValue): "auto" keeps the method recorded in the last
// revision. An install with "auto" stays client-side, as Helm 3 installs
// (Helm 4 would install server-side; see docs/helm4.md);
// --server-side=true asks for server-side.
func (r *Result) ServerSideApply(serverSide string) bool {
	switch serverSide {
	case ServerSideTrue:
		return true
	case ServerSideFalse:
		return false
	}
	return !r.Install && r.ApplyMethod == plan.ApplyMethodSSA
}

// RecordedServerSide reports whether a plan of an upgrade from rel under
// serverSide (--server-side) will be server-side, reading the apply method
// Helm 4 recorded with rel as Render does (Result.ServerSideApply): for
// what a plan prepares before its render, false when it cannot be read.
func RecordedServerSide(ctx context.Context, cfg *action.Configuration, serverSide string, rel *release.Release) bool {
	switch serverSide {
	case ServerSideTrue:
		return true
	case ServerSideFalse:
		return false
	}
	if cfg == nil || cfg.Releases == nil || rel == nil {
		return false
	}
	method, ok, err := recordedApplyMethod(ctx, cfg, rel.Namespace, rel)
	return ok && err == nil && method == plan.ApplyMethodSSA
}

// recordedApplyMethod is the apply method Helm 4 recorded with rel
// (releasestate's RecordedApplyMethod): as read with the history when cfg's
// storage is a snapshot that holds it, so a plan reads the record once.
func recordedApplyMethod(ctx context.Context, cfg *action.Configuration, ns string, rel *release.Release) (string, bool, error) {
	if s, ok := cfg.Releases.Driver.(*snapshot); ok && s.recorded != nil && s.recorded.Version == rel.Version {
		return s.recorded.Method, s.recorded.OK, s.recorded.Err
	}
	return releasestate.RecordedApplyMethod(ctx, cfg, ns, rel)
}
