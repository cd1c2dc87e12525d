package verb

import (
	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/savedplan"
)

// uninstallSource is what a saved plan of an uninstall holds in place of a
// render: the last revision, which Helm deletes, its chart and values
// (their digests pin it with its number). The replay writes the saved
// manifest into Next: a copy, not the stored revision.
func uninstallSource(rel *release.Release) *render.Result {
	next := *rel
	info := release.Info{}
	if rel.Info != nil {
		info = *rel.Info
	}
	next.Info = &info
	return &render.Result{Chart: rel.Chart, Values: rel.Config, Last: rel, Next: &next}
}

// flags are the uninstall's flags a saved plan pins: what Helm's
// uninstall runs with (the request's JSON form).
func (req UninstallRequest) flags() map[string]interface{} {
	return savedplan.UninstallFlags(req)
}
