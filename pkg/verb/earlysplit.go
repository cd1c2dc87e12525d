package verb

import (
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
)

// splitEarly starts splitting the manifest of the revision an upgrade
// starts from while Helm renders the new one (on one core): the planner
// takes it if the render's last release is that one (planner.Input's
// PreviousSplit), and splits as before otherwise. nil when there is no
// such revision or no cluster to scope its kinds.
func (c *Config) splitEarly(state *releasestate.State) *manifest.Background {
	prev := state.From
	if c.Cluster == nil || state.HistoryErr != nil || prev == nil {
		return nil
	}
	return manifest.SplitInBackground(planner.ReleaseManifestName(prev.Name, prev.Version), prev.Manifest, prev.Namespace, c.Cluster)
}
