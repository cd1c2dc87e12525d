package releasestate

import (
	"errors"
	"fmt"
	"strconv"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/helmsdk"
)

// errWriteRefused is returned if Helm's action tries to write to a
// snapshot while planning. It never should.
var errWriteRefused = errors.New("write refused while planning")

// snapshot is a read-only storage driver over one release's history, read
// once from the real storage. Helm's action reads the same revisions that
// the render's Previous and Last were chosen from, and any write fails.
// Helm mutates the values of the release it upgrades from (CoalesceTables),
// so the action gets copies whose Config is deep-copied.
type snapshot struct {
	name string
	rels []*release.Release
	// recorded is the apply method of the last revision, as read with
	// the history (nil: not read).
	recorded *Recorded
}

// Snapshot returns a copy of cfg whose release storage is a read-only
// snapshot of hist, the release's history read once (Read), with
// recorded, the apply method Helm 4 recorded with its last revision as
// read then (nil: not read): a render given the copy reads the same
// revisions, and RecordedApplyMethod that method, from memory, and so
// does a second render. cfg itself when it has no storage.
func Snapshot(cfg *action.Configuration, hist []*release.Release, recorded *Recorded) *action.Configuration {
	if cfg == nil || cfg.Releases == nil {
		return cfg
	}
	run := *cfg
	snap := newSnapshot(cfg.Releases.Name(), hist)
	snap.recorded = recorded
	run.Releases = storage.Init(snap)
	run.Releases.Log = cfg.Releases.Log
	return &run
}

func newSnapshot(name string, hist []*release.Release) *snapshot {
	s := &snapshot{name: name, rels: make([]*release.Release, 0, len(hist))}
	for _, r := range hist {
		c := *r
		c.Config = helmsdk.CopyValues(r.Config)
		s.rels = append(s.rels, &c)
	}
	return s
}

// recordedOf is the apply method s holds for rel, as read with the
// history (ok false: s holds none for it).
func (s *snapshot) recordedOf(rel *release.Release) (*Recorded, bool) {
	if s.recorded == nil || s.recorded.Version != rel.Version {
		return nil, false
	}
	return s.recorded, true
}

func (s *snapshot) Name() string { return s.name }

func (s *snapshot) Get(key string) (*release.Release, error) {
	for _, r := range s.rels {
		if key == fmt.Sprintf("sh.helm.release.v1.%s.v%d", r.Name, r.Version) {
			return r, nil
		}
	}
	return nil, driver.ErrReleaseNotFound
}

func (s *snapshot) List(filter func(*release.Release) bool) ([]*release.Release, error) {
	var out []*release.Release
	for _, r := range s.rels {
		if filter(r) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (s *snapshot) Query(labels map[string]string) ([]*release.Release, error) {
	var out []*release.Release
	for _, r := range s.rels {
		if matchLabels(r, labels) {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, driver.ErrReleaseNotFound
	}
	return out, nil
}

func matchLabels(r *release.Release, labels map[string]string) bool {
	for k, want := range labels {
		var got string
		switch k {
		case "name":
			got = r.Name
		case "owner":
			got = "helm"
		case "status":
			got = r.Info.Status.String()
		case "version":
			got = strconv.Itoa(r.Version)
		default:
			got = r.Labels[k]
		}
		if got != want {
			return false
		}
	}
	return true
}

func (s *snapshot) Create(key string, _ *release.Release) error {
	return fmt.Errorf("%w: create release record %s", errWriteRefused, key)
}

func (s *snapshot) Update(key string, _ *release.Release) error {
	return fmt.Errorf("%w: update release record %s", errWriteRefused, key)
}

func (s *snapshot) Delete(key string) (*release.Release, error) {
	return nil, fmt.Errorf("%w: delete release record %s", errWriteRefused, key)
}
