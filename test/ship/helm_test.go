package ship

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestHelmPlugin installs the plugin from an unpacked release archive (the
// goreleaser snapshot's, as users get it) with real Helm 3 and Helm 4 CLIs
// into empty plugin folders and runs real dry-run safe upgrades through
// `helm safe-upgrade`. The install from a checkout, which compiles the tool,
// is TestHelmPluginFromSource's, run by make release-check.
// Helm hands the plugin its global flags as environment variables
// (-n → HELM_NAMESPACE, --kube-context → HELM_KUBECONTEXT, --kubeconfig →
// KUBECONFIG), so each case checks one of them arrives and is honoured.
func TestHelmPlugin(t *testing.T) {
	c := testcluster.Get(t)
	rel := snapshot(t)
	for _, helm := range []struct{ name, bin string }{
		{"helm3", c.Helm3},
		{"helm4", c.Helm4},
	} {
		t.Run(helm.name, func(t *testing.T) {
			env := helmHome(t, c)
			h := cmd{Env: env}
			installPlugin(t, h, helm.bin, rel.unpack(t), rel.version)

			ns := c.Namespace(t)
			demo, demoV2 := chart(t, "demo"), chart(t, "demo-v2")
			h.mustRun(t, helm.bin, "install", "demo", demo, "-n", ns)
			cm := cmd{Env: withEnv(env, "HELM_DRIVER=configmap")}
			cm.mustRun(t, helm.bin, "install", "demo-cm", demo, "-n", ns)
			kubeconfig := kubeconfigWithBrokenDefault(t, c.Kubeconfig)

			for _, tc := range []struct {
				name string
				env  []string
				args []string
				// code is the exit code; want are lines (or line prefixes)
				// the report must hold, and stderr strings its stderr must.
				code   int
				want   []string
				stderr []string
			}{{
				name: "namespace flag",
				args: []string{"demo", demo, "-n", ns, "--dry-run"},
				want: []string{"Plan: 0 to create", "Release demo in namespace " + ns + ": revision 1 -> 2", "No changes."},
			}, {
				name: "HELM_NAMESPACE",
				env:  []string{"HELM_NAMESPACE=" + ns},
				args: []string{"demo", demo, "--dry-run"},
				want: []string{"Plan: 0 to create", "Release demo in namespace " + ns + ":"},
			}, {
				name: "kubeconfig and kube-context flags",
				args: []string{"--kubeconfig", kubeconfig, "--kube-context", "test", "demo", demo, "-n", ns, "--dry-run"},
				want: []string{"Plan: 0 to create"},
			}, {
				name:   "kubeconfig alone reaches its broken default context",
				args:   []string{"--kubeconfig", kubeconfig, "demo", demo, "-n", ns, "--dry-run"},
				code:   1,
				stderr: []string{"127.0.0.1:1"},
			}, {
				name: "HELM_DRIVER",
				env:  []string{"HELM_DRIVER=configmap"},
				args: []string{"demo-cm", demo, "-n", ns, "--dry-run"},
				want: []string{"Plan: 0 to create", "Release demo-cm in namespace " + ns + ": revision 1 -> 2"},
			}, {
				name:   "default driver does not see a configmap release",
				args:   []string{"demo-cm", demo, "-n", ns, "--dry-run"},
				code:   1,
				stderr: []string{`release "demo-cm" not found`},
			}, {
				name:   "debug flag",
				args:   []string{"--debug", "demo", demo, "-n", ns, "--dry-run"},
				want:   []string{"Plan: 0 to create"},
				stderr: []string{"debug: "},
			}, {
				name: "blocked destructive change",
				args: []string{"demo", demoV2, "-n", ns, "--dry-run", "--detailed-exitcode"},
				code: 2,
				want: []string{"Plan: 0 to create, 0 in-place, 1 rolling, 1 recreate-required"},
			}, {
				name: "acknowledged destructive change",
				args: []string{"demo", demoV2, "-n", ns, "--dry-run", "--detailed-exitcode", "--ack", "StatefulSet/" + ns + "/demo-db"},
				code: 3,
				want: []string{"Plan: 0 to create, 0 in-place, 1 rolling, 1 recreate-required"},
			}} {
				t.Run(tc.name, func(t *testing.T) {
					r := cmd{Env: withEnv(env, tc.env...)}.run(t, helm.bin, append([]string{"safe-upgrade"}, tc.args...)...)
					if r.Code != tc.code {
						t.Fatalf("helm safe-upgrade %s: want exit %d\n%s", strings.Join(tc.args, " "), tc.code, r)
					}
					if tc.code != 1 && !hasLinePrefix(r.Stdout, "Plan:") {
						t.Errorf("no line starting with Plan: in the report\n%s", r)
					}
					for _, w := range tc.want {
						if !hasLinePrefix(r.Stdout, w) {
							t.Errorf("the report has no line starting with %q\n%s", w, r)
						}
					}
					for _, w := range tc.stderr {
						if !strings.Contains(r.Stderr, w) {
							t.Errorf("stderr lacks %q\n%s", w, r)
						}
					}
				})
			}
		})
	}
}

// TestHelmPluginFromSource installs the plugin from the checkout with real
// Helm 3 and Helm 4 CLIs: the install hook builds the tool from source with
// the release's flags. That is a whole compile of the tool, so it runs in
// make release-check (AllPlatformsEnv=1) only; make test installs from the
// snapshot's archive (TestHelmPlugin).
func TestHelmPluginFromSource(t *testing.T) {
	if os.Getenv(AllPlatformsEnv) != "1" {
		t.Skipf("the from-source install compiles the tool again: make release-check runs it (%s=1)", AllPlatformsEnv)
	}
	c := testcluster.Get(t)
	for _, helm := range []struct{ name, bin string }{
		{"helm3", c.Helm3},
		{"helm4", c.Helm4},
	} {
		t.Run(helm.name, func(t *testing.T) {
			h := cmd{Env: helmHome(t, c)}
			installPlugin(t, h, helm.bin, c.Root, "-source")
			ns := c.Namespace(t)
			h.mustRun(t, helm.bin, "install", "demo", chart(t, "demo"), "-n", ns)
			r := h.run(t, helm.bin, "safe-upgrade", "demo", chart(t, "demo"), "-n", ns, "--dry-run")
			if r.Code != 0 || !hasLinePrefix(r.Stdout, "Plan: 0 to create") {
				t.Errorf("helm safe-upgrade --dry-run: want exit 0 and the plan\n%s", r)
			}
		})
	}
}

// installPlugin installs the plugin in dir with the helm CLI at bin and
// checks that helm lists it and that its --version contains version.
func installPlugin(t *testing.T, h cmd, bin, dir, version string) {
	t.Helper()
	out := h.mustRun(t, bin, "plugin", "install", dir)
	if !strings.Contains(out, "Installed plugin: safe-upgrade") {
		t.Errorf("helm plugin install said:\n%s", out)
	}
	if list := h.mustRun(t, bin, "plugin", "list"); !strings.Contains(list, "safe-upgrade") {
		t.Fatalf("helm plugin list does not show safe-upgrade:\n%s", list)
	}
	if v := h.mustRun(t, bin, "safe-upgrade", "--version"); !strings.HasPrefix(v, "helm safe-upgrade ") || !strings.Contains(v, version) {
		t.Errorf("helm safe-upgrade --version = %q, want it to contain %q", v, version)
	}
}

// kubeconfigWithBrokenDefault writes a copy of the kubeconfig at path whose
// current context points at a port nothing listens on, with the real cluster
// kept as context "test": only a plugin that receives --kube-context reaches
// the cluster.
func kubeconfigWithBrokenDefault(t *testing.T, path string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	real := cfg.Contexts[cfg.CurrentContext]
	if real == nil {
		t.Fatalf("%s has no current context", path)
	}
	broken := clientcmdapi.NewCluster()
	broken.Server = "https://127.0.0.1:1"
	broken.InsecureSkipTLSVerify = true
	cfg.Clusters["broken"] = broken
	cfg.Contexts["test"] = real.DeepCopy()
	cfg.Contexts["broken"] = &clientcmdapi.Context{Cluster: "broken", AuthInfo: real.AuthInfo}
	cfg.CurrentContext = "broken"
	out := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(out, 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}
