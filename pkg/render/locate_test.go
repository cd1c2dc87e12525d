package render

import (
	"context"
	"encoding/pem"
	"os"
	"path/filepath"

	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"helm.sh/helm/v3/pkg/repo"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/chartrepo"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/helmtest"
)

// TestRenderFromRepository: a chart named with --repo and --version is
// found in the repository's index and rendered, as helm upgrade --repo
// renders it.
func TestRenderFromRepository(t *testing.T) {
	url, _ := chartrepo.Serve(t, chartDir)
	f := newFixture(t)
	opts := baseOptions()
	opts.Install = true
	opts.Repo.RepoURL = url
	opts.Version = "0.1.0"
	res, err := Render(context.Background(), f.cfg, f.stored(t), helmtest.Settings(t), relName, "app", opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Chart.Metadata.Version != "0.1.0" || configData(t, res.Next.Manifest, "isUpgrade") != "false" {
		t.Errorf("rendered chart %s, isUpgrade %s", res.Chart.Metadata.Version, configData(t, res.Next.Manifest, "isUpgrade"))
	}
}

// TestRenderFromPrivateCARepository: a repo/chart name whose repository
// was added with its own CA (helm repo add --ca-file) is fetched over TLS
// verified by that CA, as Helm's ChartDownloader takes the entry's TLS
// files; without the entry's CA the same fetch fails verification.
func TestRenderFromPrivateCARepository(t *testing.T) {
	_, packages := chartrepo.Serve(t, chartDir)
	srv := httptest.NewTLSServer(http.FileServer(http.Dir(packages)))
	defer srv.Close()
	settings := helmtest.Settings(t)
	idx, err := repo.IndexDirectory(packages, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(settings.RepositoryCache, 0o755))
	must(idx.WriteFile(filepath.Join(settings.RepositoryCache, "private-index.yaml"), 0o644)) // what helm repo update writes
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	must(os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644))
	for _, tc := range []struct {
		caFile string
		want   string // "" renders
	}{
		{caFile, ""},
		{"", "certificate signed by unknown authority"},
	} {
		f := repo.NewFile()
		f.Add(&repo.Entry{Name: "private", URL: srv.URL, CAFile: tc.caFile})
		must(f.WriteFile(settings.RepositoryConfig, 0o644))
		fx := newFixture(t)
		opts := baseOptions()
		opts.Install = true
		_, err := Render(context.Background(), fx.cfg, fx.stored(t), settings, relName, "private/app", opts)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("entry's CA %q: render error %v, want %q", tc.caFile, err, tc.want)
		}
	}
}

// TestRenderFromOCI: a chart in an OCI registry served over plain HTTP is
// pulled through the bounded registry client with --plain-http, and
// without it by Helm 3's fallback from HTTPS to HTTP, as helm upgrade
// pulls it.
func TestRenderFromOCI(t *testing.T) {
	repo := chartrepo.ServeOCI(t, chartDir)
	for _, plainHTTP := range []bool{true, false} {
		f := newFixture(t)
		opts := baseOptions()
		opts.Install, opts.Version, opts.Repo.PlainHTTP = true, "0.1.0", plainHTTP
		res, err := Render(context.Background(), f.cfg, f.stored(t), helmtest.Settings(t), relName, repo+"/app", opts)
		if err != nil {
			t.Fatalf("--plain-http %v: %v", plainHTTP, err)
		}
		if res.Chart.Metadata.Version != "0.1.0" {
			t.Errorf("--plain-http %v: rendered chart %s", plainHTTP, res.Chart.Metadata.Version)
		}
	}
}

// TestRenderFetchesBounded: what the user names for the upgrade is read
// within fetchbound's limits, as a pull request's chart is. A repository
// whose index lists an archive served without end, a values URL served
// without end, and an index of 500 MiB: each render fails with an error
// naming what it read and the limit; the server sends little more than
// the limit, and what the render allocates is measured (not timed)
// against it. Helm's own getters read each whole.
func TestRenderFetchesBounded(t *testing.T) {
	const endless = 500 << 20
	var served atomic.Int64
	var srvURL string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var head string
		switch r.URL.Path {
		case "/charts/index.yaml":
			fmt.Fprintf(w, "apiVersion: v1\nentries:\n  app:\n  - name: app\n    version: 0.1.0\n    apiVersion: v2\n    urls: [%s/charts/app-0.1.0.tgz]\n", srvURL)
			return
		case "/big/index.yaml":
			head = "apiVersion: v1\nentries: {}\n"
		case "/charts/app-0.1.0.tgz", "/values.yaml":
		default:
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(head))
		line := []byte("#" + strings.Repeat("x", 1<<16-2) + "\n")
		for served.Load() < endless {
			n, err := w.Write(line)
			served.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	srvURL = srv.URL
	for _, tc := range []struct {
		name string
		opts func(o *Options)
		want string
	}{
		{"archive", func(o *Options) { o.Repo.RepoURL = srv.URL + "/charts" },
			"GET " + srv.URL + "/charts/app-0.1.0.tgz: a chart archive over the limit of 64 MiB"},
		{"index", func(o *Options) { o.Repo.RepoURL = srv.URL + "/big" },
			"GET " + srv.URL + "/big/index.yaml: a repository's index.yaml over the limit of 64 MiB"},
		{"values", func(o *Options) { o.Values.ValueFiles = []string{srv.URL + "/values.yaml"} },
			"GET " + srv.URL + "/values.yaml: a values file over the limit of 64 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			served.Store(0)
			f := newFixture(t)
			opts := baseOptions()
			opts.Install = true
			chart := chartDir
			if tc.name != "values" {
				chart = "app"
			}
			tc.opts(&opts)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Render(context.Background(), f.cfg, f.stored(t), helmtest.Settings(t), relName, chart, opts)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("render: %v, want an error saying %q", err, tc.want)
			}
			if got := served.Load(); got > 2*(64<<20) {
				t.Errorf("the server sent %d MiB, want the read to stop near the 64 MiB bound", got>>20)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 512<<20 {
				t.Errorf("the render allocated %d MiB, want it bounded by the limit", got>>20)
			}
		})
	}
}
