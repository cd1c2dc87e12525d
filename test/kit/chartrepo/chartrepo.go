// Package chartrepo serves a Helm chart repository on loopback for tests:
// charts packaged and indexed with the Helm SDK, as `helm package` and
// `helm repo index` make them.
package chartrepo

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	ociregistry "github.com/google/go-containerregistry/pkg/registry"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/filetree"
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

// ServeOCI packages the charts in dirs and pushes them with Helm's
// registry client to an OCI registry (go-containerregistry's, in process)
// served over plain HTTP on loopback until the test ends; it returns the
// repository, oci://127.0.0.1:PORT/charts, under which each chart is
// NAME:VERSION. Helm's settings point at files of the test only, as Serve.
func ServeOCI(t *testing.T, dirs ...string) string {
	t.Helper()
	url, _ := ServeOCIDigests(t, dirs...)
	return url
}

// ServeOCIDigests is ServeOCI, with the digest of each chart's manifest
// by NAME:VERSION (what an OCIRepository's ref.digest pins).
func ServeOCIDigests(t *testing.T, dirs ...string) (string, map[string]string) {
	t.Helper()
	digests := map[string]string{}
	_, packages := Serve(t) // Helm's settings; no chart
	srv := httptest.NewServer(ociregistry.New(ociregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	client, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptWriter(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		ch, err := loader.Load(d)
		if err != nil {
			t.Fatal(err)
		}
		path, err := chartutil.Save(ch, packages)
		if err != nil {
			t.Fatal(err)
		}
		data, err := inputfile.Read(path, "chart package", 16<<20)
		if err != nil {
			t.Fatal(err)
		}
		pushed, err := client.Push(data, host+"/charts/"+ch.Name()+":"+ch.Metadata.Version)
		if err != nil {
			t.Fatal(err)
		}
		digests[ch.Name()+":"+ch.Metadata.Version] = pushed.Manifest.Digest
	}
	return "oci://" + host + "/charts", digests
}

// WebChart writes a chart web 1.0.0 of one Deployment named after the
// release, whose image tag is the value image.tag (default v0): a
// parameter's change rolls it. It returns the chart's directory.
func WebChart(t *testing.T) string {
	t.Helper()
	return filepath.Join(filetree.Write(t, map[string]string{
		"web/Chart.yaml":  "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"web/values.yaml": "image: {tag: v0}\n",
		"web/templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: "nginx:{{ .Values.image.tag }}"
`,
	}), "web")
}
