package render

import (
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
)

// ReadHistory reads the history of release name from cfg's storage once,
// before rendering, and returns a copy of cfg whose storage is a read-only
// snapshot of it (Render given the copy reads the same revisions from
// memory, and so does a second render), with the release an upgrade would
// start from (nil when there is none: an install, or a history Render
// refuses). On error, use cfg itself: Render reads the history again and
// reports the error where it always has.
func ReadHistory(cfg *action.Configuration, name string) (*action.Configuration, *release.Release, error) {
	if cfg == nil || cfg.Releases == nil {
		return cfg, nil, nil
	}
	hist, err := History(cfg.Releases, name)
	if err != nil {
		return nil, nil, err
	}
	run := *cfg
	run.Releases = storage.Init(newSnapshot(cfg.Releases.Name(), hist))
	run.Releases.Log = cfg.Releases.Log
	if len(hist) == 0 || hist[0].Info.Status == release.StatusUninstalled || CheckPending(hist, name, "") != nil {
		return &run, nil, nil
	}
	return &run, currentRelease(hist), nil
}
