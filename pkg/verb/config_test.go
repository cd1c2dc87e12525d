package verb

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	helmcli "helm.sh/helm/v3/pkg/cli"
	"k8s.io/client-go/kubernetes"
)

// TestClientRate checks the client configuration the planner and the apply
// use: --qps/--burst-limit (or HELM_QPS/HELM_BURST_LIMIT) bound the request
// rate when given, and there is no client-side limit otherwise.
func TestClientRate(t *testing.T) {
	const requests = 5
	tests := []struct {
		name string
		env  map[string]string
		set  func(*helmcli.EnvSettings)
		qps  float32
		min  time.Duration
	}{
		// Unlimited is asserted on the configuration (QPS -1), not by timing:
		// an upper bound on elapsed time flakes on a loaded machine.
		{name: "default: unlimited", qps: -1},
		// 5 requests at 2/s with a burst of 1: 4 waits of 0.5 s.
		{name: "--qps 2", set: func(s *helmcli.EnvSettings) { s.QPS, s.BurstLimit = 2, 1 }, qps: 2, min: 1900 * time.Millisecond},
		{name: "HELM_QPS=2", env: map[string]string{"HELM_QPS": "2", "HELM_BURST_LIMIT": "1"}, qps: 2, min: 1900 * time.Millisecond},
	}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"major":"1","minor":"37","gitVersion":"v1.37.2"}`)
	}))
	defer server.Close()
	kubeconfig := writeKubeconfig(t, server.URL)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"HELM_QPS", "HELM_BURST_LIMIT"} {
				t.Setenv(k, tt.env[k])
			}
			c := testConfig(t, kubeconfig, tt.set)
			rc, err := c.restConfig(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if rc.QPS != tt.qps || rc.UserAgent != "helm-safe-upgrade/test" {
				t.Fatalf("QPS %v user agent %q, want %v and ours", rc.QPS, rc.UserAgent, tt.qps)
			}
			client, err := kubernetes.NewForConfig(rc)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			for range requests {
				if _, err := client.Discovery().ServerVersion(); err != nil {
					t.Fatal(err)
				}
			}
			took := time.Since(start)
			if took < tt.min {
				t.Errorf("%d requests took %s, want at least %s", requests, took, tt.min)
			}
		})
	}
}

// writeKubeconfig writes a kubeconfig for the API server at url and returns
// its path.
func writeKubeconfig(t *testing.T, url string) string {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "config")
	err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: `+url+`}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {token: t}}]
current-context: c
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// testConfig is the configuration of a run with --kubeconfig kubeconfig
// and the settings flags parse into (pkg/cli's TestHelmClientFlags) set by
// set, if not nil.
func testConfig(t *testing.T, kubeconfig string, set func(*helmcli.EnvSettings)) *Config {
	t.Helper()
	settings := helmcli.New()
	settings.KubeConfig = kubeconfig
	if set != nil {
		set(settings)
	}
	return NewConfig(settings, io.Discard, "helm-safe-upgrade/test", nil)
}
