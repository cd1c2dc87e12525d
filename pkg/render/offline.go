package render

import (
	"context"
	"errors"
	"fmt"
	"io"

	helmtime "helm.sh/helm/v3/pkg/time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/postrender"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/helmsdk"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apis"
)

// NewOfflineConfiguration returns a Helm configuration that never reaches a
// cluster: empty in-memory release storage (so Render installs), a kube
// client that does nothing, and Helm's default capabilities, the
// `helm template` view. lookup returns nothing, as in `helm template`.
func NewOfflineConfiguration() *action.Configuration {
	return &action.Configuration{
		Releases:     storage.Init(driver.NewMemory()),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: chartutil.DefaultCapabilities,
		Log:          func(string, ...interface{}) {},
	}
}

// DefaultKubeVersion is the Kubernetes version offline renders target when
// --kube-version is not given: the newest minor the tool knows.
var DefaultKubeVersion = fmt.Sprintf("v1.%d.0", apis.NewestMinor)

// Target is the cluster an offline plan is made for.
type Target struct {
	Capabilities *chartutil.Capabilities
	// Minor is the Kubernetes minor (1.Minor), for the API removal table.
	Minor int
}

// OfflineTarget returns what offline renders see of the cluster, from
// --kube-version and --api-versions with `helm template`'s meaning:
// .Capabilities.KubeVersion is the version given (DefaultKubeVersion
// without one), and .Capabilities.APIVersions holds Helm's default API
// versions that this Kubernetes version still serves (a chart that checks
// for policy/v1beta1 then renders what it would render on that cluster),
// plus each --api-versions entry.
func (o *Options) OfflineTarget() (*Target, error) {
	v := o.KubeVersion
	if v == "" {
		v = DefaultKubeVersion
	}
	kv, err := chartutil.ParseKubeVersion(v)
	if err != nil {
		return nil, fmt.Errorf("invalid kube version '%s': %s", v, err)
	}
	minor, err := apis.ParseMinor(kv.Version)
	if err != nil {
		return nil, fmt.Errorf("--kube-version %s: %w", v, err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	served := make(chartutil.VersionSet, 0, len(caps.APIVersions)+len(o.APIVersions))
	for _, gv := range caps.APIVersions {
		if apis.GroupVersionServed(gv, minor) {
			served = append(served, gv)
		}
	}
	caps.APIVersions = append(served, o.APIVersions...)
	return &Target{Capabilities: caps, Minor: minor}, nil
}

// Base is what an offline plan upgrades from: a chart rendered with its
// values files, or an already rendered manifest.
type Base struct {
	Chart  string
	Values []string
	// Manifest is a rendered manifest (--from-manifest); its values are
	// unknown, so --reuse-values has nothing to reuse.
	Manifest string
	// PostRender is the base chart's own in-process post-renderer (a
	// GitOps base's helm-controller post-renderers); the head's
	// Options.PostRender is not applied to the base.
	PostRender postrender.PostRenderer
	// Install, with neither Chart nor Manifest, renders the head as Helm's
	// install (.Release.IsInstall, revision 1): a GitOps object new in the
	// head, which helm-controller installs and Argo CD renders with helm
	// template.
	Install bool
}

// HeadError is RenderOffline's error when the head failed to render. Base
// is the base release it was rendered over: the head's lookup answers with
// its objects, so a template's `fail` can echo their Secrets' values.
type HeadError struct {
	Base *release.Release
	err  error
}

func (e *HeadError) Error() string { return e.err.Error() }

func (e *HeadError) Unwrap() error { return e.err }

// RenderOffline renders the head chart as `helm upgrade` renders it over a
// release installed from base, without any cluster: the base is rendered as
// an install (revision 1) and kept in an in-memory release storage, then the
// head is rendered as an upgrade of it (.Release.IsUpgrade, revision 2,
// --reuse-values / --reset-values / --reset-then-reuse-values against the
// base's values, the chart checks made only on upgrade). Both see target's
// capabilities. The head's `lookup` finds the base release's objects (see
// baseCluster), as on the cluster the base was installed on; the base's
// finds only the release namespace. The result's Previous is the base
// release.
func RenderOffline(ctx context.Context, settings *cli.EnvSettings, name string, base Base, headChart string, opts Options, target *Target) (*Result, error) {
	if settings == nil {
		settings = cli.New()
	}
	ns := opts.Namespace
	if ns == "" {
		ns = settings.Namespace()
	}
	cfg := NewOfflineConfiguration()
	cfg.Capabilities = target.Capabilities
	if base.Install && base.Chart == "" && base.Manifest == "" {
		opts.Install, opts.ReuseValues, opts.ResetThenReuseValues = true, false, false
		return renderOver(ctx, cfg, settings, name, ns, nil, headChart, opts, true)
	}
	baseRel, err := baseRelease(ctx, cfg, settings, name, ns, base, opts)
	if err != nil {
		return nil, err
	}
	if base.Chart == "" {
		// The base's values are unknown: there is nothing to reuse, and
		// reusing the placeholder chart's (empty) values would drop the
		// head chart's defaults.
		opts.ReuseValues, opts.ResetThenReuseValues = false, false
	}
	return renderOver(ctx, cfg, settings, name, ns, baseRel, headChart, opts, true)
}

// baseRelease is the release an offline plan upgrades from, as Helm stores
// a successful install (revision 1, deployed): the base chart rendered as
// an install into the empty namespace, or the rendered manifest given,
// whose values are unknown.
func baseRelease(ctx context.Context, cfg *action.Configuration, settings *cli.EnvSettings, name, ns string, base Base, opts Options) (*release.Release, error) {
	var rel *release.Release
	if base.Chart != "" {
		baseOpts := Options{Namespace: ns, Install: true, PostRenderer: opts.PostRenderer, PostRendererArgs: opts.PostRendererArgs,
			PostRender: base.PostRender, SkipSchemaValidation: opts.SkipSchemaValidation}
		baseOpts.Values.ValueFiles = base.Values
		res, err := renderOver(ctx, cfg, settings, name, ns, nil, base.Chart, baseOpts, false)
		if err != nil {
			return nil, err
		}
		rel = res.Next
	} else {
		rel = &release.Release{Name: name, Namespace: ns, Manifest: base.Manifest, Config: map[string]interface{}{},
			Chart: &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "base", Version: "0.0.0"}}}
	}
	now := helmtime.Now()
	rel.Version = 1
	rel.Info = &release.Info{FirstDeployed: now, LastDeployed: now, Status: release.StatusDeployed, Description: "Install complete"}
	return rel, nil
}

// renderOver is every render of an offline plan: chart for release name
// in ns as Helm renders it on a cluster where base was installed (nil:
// nothing was, and ns is empty). base is then the deployed release of
// cfg's memory storage, and its objects, with ns, are what the templates'
// `lookup` finds (baseCluster). The head chart (head) must render as an
// install over nothing and as an upgrade over a base, and its failure is a
// HeadError over base; the base chart renders over nothing.
func renderOver(ctx context.Context, cfg *action.Configuration, settings *cli.EnvSettings, name, ns string, base *release.Release, chartRef string, opts Options, head bool) (*Result, error) {
	var seed string
	if base != nil {
		// Helm's upgrade changes the values of the release it upgrades from
		// (CoalesceTables): the storage holds a copy, base stays as it was.
		stored := *base
		stored.Config = helmsdk.CopyValues(base.Config)
		if err := cfg.Releases.Create(&stored); err != nil {
			return nil, fmt.Errorf("storing the base release in memory: %w", err)
		}
		seed = base.Manifest
	}
	cluster, err := newBaseCluster(seed, name, ns)
	if err != nil {
		return nil, fmt.Errorf("base release: %w", err)
	}
	defer cluster.Close()
	cfg.RESTClientGetter = cluster.getter()
	res, err := Render(ctx, cfg, offlineStored{base: base}, settings, name, chartRef, opts)
	switch {
	case err != nil && !head:
		return nil, fmt.Errorf("base chart %s: %w", chartRef, err)
	case err != nil && base == nil:
		return nil, &HeadError{Base: &release.Release{Name: name, Namespace: ns}, err: fmt.Errorf("head chart %s: %w", chartRef, err)}
	case err != nil:
		return nil, &HeadError{Base: base, err: fmt.Errorf("head chart %s: %w", chartRef, err)}
	case head && base == nil && !res.Install:
		return nil, errors.New("head chart " + chartRef + ": rendered as an upgrade, not as an install")
	case head && base != nil && res.Previous == nil:
		return nil, errors.New("head chart " + chartRef + ": rendered as an install, not as an upgrade of the base")
	}
	return res, nil
}

// offlineStored is the stored state an offline render starts from, which
// RenderOffline made in memory: no release (the base's install, or the
// head's), or the base, installed and deployed by Helm 3 (no apply method
// recorded). cfg's memory storage holds exactly that.
type offlineStored struct{ base *release.Release }

func (s offlineStored) Revisions() ([]*release.Release, error) {
	if s.base == nil {
		return nil, nil
	}
	return []*release.Release{s.base}, nil
}

func (s offlineStored) Snapshot(cfg *action.Configuration) *action.Configuration { return cfg }

func (s offlineStored) Missing(name, ns string) error {
	return fmt.Errorf("release %q not found in namespace %s (offline)", name, ns)
}

func (s offlineStored) Upgrade(string, string) (*release.Release, string, bool, error) {
	return s.base, "", true, nil
}
