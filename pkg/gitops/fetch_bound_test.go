package gitops

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/cli"
)

// TestFetchIndexBounded (issue 50): a repository a pull request names
// that serves an index.yaml of 500 MiB, announced or not, is refused
// within the index's bound (64 MiB): the error names the index's URL and
// the limit, the server sends little more than the bound, and what the
// fetch allocates is measured (not timed) against it.
func TestFetchIndexBounded(t *testing.T) {
	const size = 500 << 20
	for _, announced := range []bool{false, true} {
		var served atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/index.yaml") {
				http.NotFound(w, r)
				return
			}
			if announced {
				w.Header().Set("Content-Length", "524288000")
			}
			line := []byte("# " + strings.Repeat("x", 1<<16-3) + "\n")
			w.Write([]byte("apiVersion: v1\nentries: {}\n"))
			for served.Load() < size {
				n, err := w.Write(line)
				served.Add(int64(n))
				if err != nil {
					return
				}
			}
		}))
		settings := cli.New()
		home := t.TempDir()
		settings.RepositoryConfig, settings.RepositoryCache = filepath.Join(home, "repositories.yaml"), filepath.Join(home, "cache")
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := Fetch(settings, Chart{RepoURL: srv.URL + "/charts", Name: "app", Version: "1.0.0"}, t.TempDir(), time.Minute)
		runtime.ReadMemStats(&after)
		srv.Close()
		want := "GET " + srv.URL + "/charts/index.yaml: a repository's index.yaml"
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "over the limit of 64 MiB") || !strings.Contains(err.Error(), "chart app@1.0.0") {
			t.Fatalf("announced %v: %v, want an error naming the chart, %q and the limit", announced, err, want)
		}
		if got := served.Load(); got > 2*(64<<20) {
			t.Errorf("announced %v: the server sent %d MiB of the index, want the fetch to stop near the 64 MiB bound", announced, got>>20)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 512<<20 {
			t.Errorf("announced %v: the fetch allocated %d MiB, want it bounded by the index's limit", announced, got>>20)
		}
	}
}
