package cli

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/golden"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
)

func execute(t *testing.T, argv0 string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Execute(argv0, args, iostreams.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, BuildInfo{Version: "v0.0.0-test", Commit: "abc123"})
	return out.String(), errOut.String(), code
}

func assertGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Assert(t, filepath.Join("testdata", name), []byte(got))
}

const demo = "../../testdata/charts/demo"
const demoV2 = "../../testdata/charts/demo-v2"

func TestVersionAndNames(t *testing.T) {
	out, _, code := execute(t, "/plugins/bin/helm-safe-upgrade", "--version")
	if code != 0 || !strings.Contains(out, "v0.0.0-test") || !strings.Contains(out, "abc123") || !strings.Contains(out, "helm SDK") {
		t.Fatalf("--version: %d %q", code, out)
	}
	for argv0, want := range map[string]string{"helm-safe-upgrade": "helm safe-upgrade RELEASE CHART", "kubectl-safe_upgrade": "kubectl safe-upgrade RELEASE CHART"} {
		out, _, code := execute(t, argv0, "--help")
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("%s --help: exit %d, want %q in:\n%s", argv0, code, want, out)
		}
	}
}

// TestOfflineGolden covers every output format through the whole command,
// offline so no cluster is needed (the cluster path is end-to-end tested).
func TestOfflineGolden(t *testing.T) {
	t.Setenv("GITHUB_ACTIONS", "")
	for _, format := range []string{"text", "json", "markdown"} {
		t.Run(format, func(t *testing.T) {
			out, errOut, code := execute(t, "helm-safe-upgrade", "demo", demoV2, "-n", "demo", "--offline", "--from-chart", demo, "-o", format)
			if code != ExitBlocked {
				t.Fatalf("exit %d, want %d (blocked)\n%s", code, ExitBlocked, errOut)
			}
			assertGolden(t, "offline."+format, out)
			assertGolden(t, "offline.stderr", errOut)
		})
	}
}

func TestDetailedExitcode(t *testing.T) {
	_, errOut, code := execute(t, "helm-safe-upgrade", "demo", demo, "-n", "demo", "--offline", "--from-chart", demo, "--detailed-exitcode")
	if code != ExitOK {
		t.Fatalf("no changes: exit %d, want 0\n%s", code, errOut)
	}
	_, errOut, code = execute(t, "helm-safe-upgrade", "demo", demoV2, "-n", "demo", "--offline", "--from-chart", demo, "--detailed-exitcode",
		"--ack", "StatefulSet/demo/demo-db")
	if code != ExitPending {
		t.Fatalf("acked changes: exit %d, want 3\n%s", code, errOut)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	badValues := filepath.Join(dir, "values.yaml")
	os.WriteFile(badValues, []byte("web:\n  replicas: 2\n bad: [\n"), 0o644)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"unknown flag", []string{"demo", demo, "--no-such-flag"}, []string{"--no-such-flag"}},
		{"missing arguments", []string{"demo"}, []string{"RELEASE and CHART"}},
		{"missing chart", []string{"demo", "/no/such/chart", "--offline", "--from-chart", demo}, []string{"/no/such/chart"}},
		{"values file with a YAML error", []string{"demo", demoV2, "--offline", "--from-chart", demo, "-f", badValues}, []string{badValues, "line 2"}},
		{"bad output format", []string{"demo", demo, "-o", "xml"}, []string{"--output", "xml"}},
		{"bad ack", []string{"demo", demo, "--ack", "StatefulSet"}, []string{"--ack", "StatefulSet"}},
		{"missing ack file", []string{"demo", demo, "--ack-file", "/no/acks.yaml"}, []string{"/no/acks.yaml"}},
		{"bad --server-side", []string{"demo", demo, "--server-side", "yes"}, []string{"--server-side", "yes"}},
		{"--force with --force-conflicts", []string{"demo", demo, "--force", "--force-conflicts"}, []string{"--force", "--force-conflicts"}},
		{"offline without base", []string{"demo", demo, "--offline"}, []string{"--from-chart", "--from-manifest"}},
		{"unreachable cluster", []string{"demo", demo, "--dry-run", "--kube-apiserver", "https://127.0.0.1:1", "--timeout", "5s"}, []string{"127.0.0.1:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := execute(t, "helm-safe-upgrade", tt.args...)
			if code != ExitError {
				t.Fatalf("exit %d, want 1\n%s", code, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("error %q does not name %q", errOut, w)
				}
			}
		})
	}
}

// TestSecretsNeverLeak: no value of a Secret, in clear or base64, reaches any
// output format or stderr.
func TestSecretsNeverLeak(t *testing.T) {
	values := filepath.Join(t.TempDir(), "v.yaml")
	os.WriteFile(values, []byte("db:\n  password: Sup3r-Secret-Value-42\n"), 0o644)
	secrets := []string{"demo-password", "Sup3r-Secret-Value-42",
		base64.StdEncoding.EncodeToString([]byte("demo-password")), base64.StdEncoding.EncodeToString([]byte("Sup3r-Secret-Value-42"))}
	for _, format := range []string{"text", "json", "markdown"} {
		out, errOut, code := execute(t, "helm-safe-upgrade", "demo", demo, "-n", "demo", "--offline", "--from-chart", demo, "-f", values, "-o", format)
		if code == ExitError {
			t.Fatalf("%s: exit 1\n%s", format, errOut)
		}
		if !strings.Contains(out, "password") {
			t.Fatalf("%s: the changed key is not shown at all:\n%s", format, out)
		}
		for _, s := range secrets {
			if strings.Contains(out, s) || strings.Contains(errOut, s) {
				t.Errorf("%s output leaks %q:\n%s\n%s", format, s, out, errOut)
			}
		}
	}
}

func TestGitHubActionsAnnotations(t *testing.T) {
	t.Setenv("GITHUB_ACTIONS", "true")
	out, errOut, code := execute(t, "helm-safe-upgrade", "demo", demoV2, "-n", "demo", "--offline", "--from-chart", demo, "-o", "json")
	if code != ExitBlocked || !strings.Contains(errOut, "::error title=safe-upgrade%3A recreate-required StatefulSet.apps/demo/demo-db::") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if strings.Contains(out, "::error") {
		t.Fatal("annotations leaked into the JSON on stdout")
	}
}
