// Package chartrepo serves a Helm chart repository on loopback for tests:
// charts packaged and indexed with the Helm SDK, as `helm package` and
// `helm repo index` make them.
package chartrepo

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
)

// Serve packages the charts in dirs, indexes them, serves them over HTTP on
// loopback until the test ends, and returns the repository's URL and the
// directory of the packages (NAME-VERSION.tgz). Helm's repository and
// registry settings (HELM_REPOSITORY_CONFIG, HELM_REPOSITORY_CACHE,
// HELM_REGISTRY_CONFIG) point at files of the test only.
func Serve(t *testing.T, dirs ...string) (url, packages string) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HELM_REPOSITORY_CONFIG", filepath.Join(home, "repositories.yaml"))
	t.Setenv("HELM_REPOSITORY_CACHE", filepath.Join(home, "cache"))
	t.Setenv("HELM_REGISTRY_CONFIG", filepath.Join(home, "registry.json"))
	packages = t.TempDir()
	for _, d := range dirs {
		ch, err := loader.Load(d)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := chartutil.Save(ch, packages); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(packages)))
	t.Cleanup(srv.Close)
	idx, err := repo.IndexDirectory(packages, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(packages, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv.URL, packages
}
