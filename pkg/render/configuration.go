package render

import (
	"crypto/tls"
	"fmt"
	"io"
	"strconv"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/fetchbound"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
)

// renderClient is the kube client Helm's action runs with while planning.
//
// Build returns no resources: Helm's install/upgrade dry-run builds (and
// validates) the whole manifest through the API discovery, twice for an
// upgrade, which costs about 2 s of CPU per 1000 objects, and then GETs
// every object it would create to check ownership. The plan parses and
// fetches the objects itself. Everything else goes to the real client
// (IsReachable in particular), except writes, which Helm does not make in a
// dry run and which are refused if it ever did.
type renderClient struct {
	kube.Interface
}

func (*renderClient) Build(io.Reader, bool) (kube.ResourceList, error) {
	return kube.ResourceList{}, nil
}

func (*renderClient) Create(kube.ResourceList) (*kube.Result, error) {
	return nil, fmt.Errorf("%w: kube create", ErrWriteRefused)
}

func (*renderClient) Update(_, _ kube.ResourceList, _ bool) (*kube.Result, error) {
	return nil, fmt.Errorf("%w: kube update", ErrWriteRefused)
}

func (*renderClient) Delete(kube.ResourceList) (*kube.Result, []error) {
	return nil, []error{fmt.Errorf("%w: kube delete", ErrWriteRefused)}
}

// snapshot is a read-only storage driver over one release's history, read
// once from the real storage. Helm's action reads the same revisions that
// Result.Previous and Result.Last were chosen from, and any write fails.
// Helm mutates the values of the release it upgrades from (CoalesceTables),
// so the action gets copies whose Config is deep-copied.
type snapshot struct {
	name string
	rels []*release.Release
	// recorded is the apply method of the last revision, as read with
	// the history (nil: not read).
	recorded *releasestate.Recorded
}

// Snapshot returns a copy of cfg whose release storage is a read-only
// snapshot of hist, the release's history read once (releasestate's
// Read), with recorded, the apply method Helm 4 recorded with its last
// revision as read then (nil: not read): Render given the copy reads the
// same revisions, and that method, from memory, and so does a second
// render. cfg itself when it has no storage.
func Snapshot(cfg *action.Configuration, hist []*release.Release, recorded *releasestate.Recorded) *action.Configuration {
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
		c.Config = CopyValues(r.Config)
		s.rels = append(s.rels, &c)
	}
	return s
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
	return fmt.Errorf("%w: create release record %s", ErrWriteRefused, key)
}

func (s *snapshot) Update(key string, _ *release.Release) error {
	return fmt.Errorf("%w: update release record %s", ErrWriteRefused, key)
}

func (s *snapshot) Delete(key string) (*release.Release, error) {
	return nil, fmt.Errorf("%w: delete release record %s", ErrWriteRefused, key)
}

// newTLSConfig is helm's internal tlsutil.NewClientTLS.
func newTLSConfig(c action.ChartPathOptions) (*tls.Config, error) {
	conf, err := fetchbound.TLSConfig(c.CertFile, c.KeyFile, c.CaFile, c.InsecureSkipTLSverify)
	if conf == nil && err == nil {
		conf = &tls.Config{}
	}
	return conf, err
}
