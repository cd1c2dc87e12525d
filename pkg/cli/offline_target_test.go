package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tempChart writes a chart named app with the given Chart.yaml extra lines
// and templates.
func tempChart(t *testing.T, version, chartExtra string, templates map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "app")
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"Chart.yaml": "apiVersion: v2\nname: app\nversion: " + version + "\n" + chartExtra}
	for name, body := range templates {
		files[filepath.Join("templates", name)] = body
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const cmTemplate = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {v: {{ .Chart.Version | quote }}}\n"

// TestOfflineKubeVersion: a chart requiring Kubernetes >=1.25 renders offline
// with no flag (the newest known version is the default target), and
// --kube-version 1.24.0 reproduces Helm's refusal with exit 1.
func TestOfflineKubeVersion(t *testing.T) {
	base := tempChart(t, "1.0.0", "", map[string]string{"cm.yaml": cmTemplate})
	head := tempChart(t, "2.0.0", "kubeVersion: \">=1.25.0-0\"\n", map[string]string{"cm.yaml": cmTemplate})
	_, errOut, code := execute(t, "helm-safe-upgrade", "app", head, "-n", "demo", "--offline", "--from-chart", base)
	if code != ExitOK {
		t.Fatalf("no --kube-version: exit %d, want 0\n%s", code, errOut)
	}
	_, errOut, code = execute(t, "helm-safe-upgrade", "app", head, "-n", "demo", "--offline", "--from-chart", base, "--kube-version", "1.24.0")
	if code != ExitError || !strings.Contains(errOut, "chart requires kubeVersion: >=1.25.0-0 which is incompatible with Kubernetes v1.24.0") {
		t.Fatalf("--kube-version 1.24.0: exit %d, want 1 with Helm's refusal\n%s", code, errOut)
	}
	_, errOut, code = execute(t, "helm-safe-upgrade", "app", head, "-n", "demo", "--dry-run", "--kube-version", "1.24.0")
	if code != ExitError || !strings.Contains(errOut, "--kube-version and --api-versions need --offline") {
		t.Fatalf("--kube-version without --offline: exit %d\n%s", code, errOut)
	}
}

const pdbTemplate = `apiVersion: {{ .Values.pdbAPI | default "policy/v1" }}
kind: PodDisruptionBudget
metadata: {name: app}
spec: {minAvailable: 1, selector: {matchLabels: {app: app}}}
`

// TestOfflineRemovedAPI: a head that adds a policy/v1beta1
// PodDisruptionBudget is invalid offline, naming the removal, and blocks.
func TestOfflineRemovedAPI(t *testing.T) {
	base := tempChart(t, "1.0.0", "", map[string]string{"cm.yaml": cmTemplate})
	head := tempChart(t, "2.0.0", "", map[string]string{"cm.yaml": cmTemplate,
		"pdb.yaml": strings.Replace(pdbTemplate, `.Values.pdbAPI | default "policy/v1"`, `"policy/v1beta1"`, 1)})
	out, errOut, code := execute(t, "helm-safe-upgrade", "app", head, "-n", "demo", "--offline", "--from-chart", base, "-o", "json")
	if code != ExitBlocked {
		t.Fatalf("exit %d, want 2 (blocked)\n%s", code, errOut)
	}
	var p struct {
		Changes []struct {
			Kind     string `json:"kind"`
			Class    string `json:"class"`
			Blocking bool   `json:"blocking"`
			Reasons  []struct{ Message string }
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Changes {
		if c.Kind == "PodDisruptionBudget" {
			// A create has no class in the JSON contract (updates only);
			// an invalid one is blocking.
			if !c.Blocking || len(c.Reasons) == 0 || !strings.Contains(c.Reasons[0].Message, "removed in Kubernetes 1.25") ||
				!strings.Contains(c.Reasons[0].Message, "policy/v1 PodDisruptionBudget") {
				t.Fatalf("PDB change = %+v", c)
			}
			// Served by 1.24, deprecated: not blocking.
			_, errOut, code = execute(t, "helm-safe-upgrade", "app", head, "-n", "demo", "--offline", "--from-chart", base, "--kube-version", "1.24.0")
			if code != ExitOK {
				t.Fatalf("--kube-version 1.24.0: exit %d, want 0\n%s", code, errOut)
			}
			return
		}
	}
	t.Fatalf("no PodDisruptionBudget change in %s", out)
}
