// Package helmtest holds the Helm test doubles that the unit tests of
// several packages share (pkg/render, pkg/apply): a release storage that
// counts writes, a Helm configuration over it, and Helm settings that touch
// no file of the user's.
package helmtest

import (
	"path/filepath"
	"sync/atomic"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// CountingDriver is Helm's memory storage driver counting writes, so a test
// can prove that something wrote nothing to the release storage.
type CountingDriver struct {
	*driver.Memory
	writes atomic.Int32
}

// NewCountingDriver returns an empty memory driver for namespace.
func NewCountingDriver(namespace string) *CountingDriver {
	mem := driver.NewMemory()
	mem.SetNamespace(namespace)
	return &CountingDriver{Memory: mem}
}

// Writes is the number of creates, updates and deletes so far.
func (d *CountingDriver) Writes() int { return int(d.writes.Load()) }

// Create implements driver.Driver.
func (d *CountingDriver) Create(key string, r *release.Release) error {
	d.writes.Add(1)
	return d.Memory.Create(key, r)
}

// Update implements driver.Driver.
func (d *CountingDriver) Update(key string, r *release.Release) error {
	d.writes.Add(1)
	return d.Memory.Update(key, r)
}

// Delete implements driver.Driver.
func (d *CountingDriver) Delete(key string) (*release.Release, error) {
	d.writes.Add(1)
	return d.Memory.Delete(key)
}

// Config returns a Helm configuration over store and kubeClient, with
// Helm's default capabilities and its log sent to t.
func Config(t testing.TB, store driver.Driver, kubeClient kube.Interface) *action.Configuration {
	return &action.Configuration{
		Releases:     storage.Init(store),
		KubeClient:   kubeClient,
		Capabilities: chartutil.DefaultCapabilities,
		Log:          t.Logf,
	}
}

// Settings returns Helm's settings with the repository and registry files
// in a temporary folder of t.
func Settings(t testing.TB) *cli.EnvSettings {
	t.Helper()
	s := cli.New()
	dir := t.TempDir()
	s.RepositoryConfig = filepath.Join(dir, "repositories.yaml")
	s.RepositoryCache = filepath.Join(dir, "cache")
	s.RegistryConfig = filepath.Join(dir, "registry.json")
	return s
}

// NextRevision stores, in cfg's release storage, a copy of release name's
// last revision as the next one, in status (an interrupted or a failed
// upgrade, a newer deploy), and returns it.
func NextRevision(t testing.TB, cfg *action.Configuration, name string, status release.Status) *release.Release {
	t.Helper()
	last, err := cfg.Releases.Last(name)
	if err != nil {
		t.Fatal(err)
	}
	next := *last
	next.Info = &release.Info{Status: status}
	next.Version = last.Version + 1
	if err := cfg.Releases.Create(&next); err != nil {
		t.Fatal(err)
	}
	return &next
}
