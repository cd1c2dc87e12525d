package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRulesFileGolden: the rules of --rules FILE are shown in every format
// as "ignored by rule FILE#N RULE", and the changes they cover are not
// counted.
func TestRulesFileGolden(t *testing.T) {
	t.Setenv("GITHUB_ACTIONS", "")
	for _, format := range []string{"text", "json", "markdown"} {
		t.Run(format, func(t *testing.T) {
			out, errOut, code := execute(t, "helm-safe-upgrade", "demo", demoV2, "-n", "demo", "--offline", "--from-chart", demo,
				"--rules", "testdata/rules.yaml", "--ack", "StatefulSet/demo/demo-db", "--detailed-exitcode", "-o", format)
			if code != ExitPending {
				t.Fatalf("exit %d, want 3: the acknowledged StatefulSet still counts\n%s", code, errOut)
			}
			assertGolden(t, "rules."+format, out)
		})
	}
}

// TestRulesFileBesideChart: a .safe-upgrade.yaml in the chart's directory is
// read without a flag, and its rules are named by its path.
func TestRulesFileBesideChart(t *testing.T) {
	chart := filepath.Join(t.TempDir(), "noisy")
	os.MkdirAll(filepath.Join(chart, "templates"), 0o755)
	os.WriteFile(filepath.Join(chart, "Chart.yaml"), []byte("apiVersion: v2\nname: noisy\nversion: 1.0.0\n"), 0o644)
	os.WriteFile(filepath.Join(chart, "values.yaml"), []byte("level: info\n"), 0o644)
	os.WriteFile(filepath.Join(chart, "templates", "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {level: {{ .Values.level }}}\n"), 0o644)
	values := filepath.Join(t.TempDir(), "debug.yaml")
	os.WriteFile(values, []byte("level: debug\n"), 0o644)
	args := []string{"noisy", chart, "-n", "demo", "--offline", "--from-chart", chart, "-f", values, "--detailed-exitcode"}

	if _, errOut, code := execute(t, "helm-safe-upgrade", args...); code != ExitPending {
		t.Fatalf("without a rules file: exit %d, want 3\n%s", code, errOut)
	}
	rules := filepath.Join(chart, ".safe-upgrade.yaml")
	os.WriteFile(rules, []byte("ignore:\n- ConfigMap/cfg:data.level\n"), 0o644)
	out, errOut, code := execute(t, "helm-safe-upgrade", args...)
	if code != ExitOK || !strings.Contains(out, "(ignored by rule "+rules+"#1 ConfigMap/cfg:data.level)") {
		t.Fatalf("with %s: exit %d, want 0 and the rule named\n%s\n%s", rules, code, out, errOut)
	}
}

// TestRulesFileBadInput: a rules file that cannot be used is an error (exit
// 1) naming the file and what is wrong in it.
func TestRulesFileBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(data), 0o644)
		return path
	}
	tests := []struct {
		name string
		file string
		want []string
	}{
		{"unknown field", write("typo.yaml", "ignores:\n- spec.replicas\n"), []string{"typo.yaml", `unknown field "ignores"`}},
		{"rule as a map", write("map.yaml", "ignore:\n- {path: spec.replicas}\n"), []string{"map.yaml", "ignore"}},
		{"bad rule", write("rule.yaml", "ignore: [\"Deployment:\"]\n"), []string{"rule.yaml", `ignore[0] "Deployment:"`}},
		{"not YAML", write("broken.yaml", "ignore: [\n"), []string{"broken.yaml"}},
		{"missing", filepath.Join(dir, "none.yaml"), []string{"none.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := execute(t, "helm-safe-upgrade", "demo", demo, "-n", "demo", "--offline", "--from-chart", demo, "--rules", tt.file)
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

// TestOfflineCRDsGolden: offline, a crds/ CRD is compared with the base
// chart's: the report says what applying it would do, that helm upgrade
// will not, and --skip-crds changes nothing on an upgrade.
func TestOfflineCRDsGolden(t *testing.T) {
	out, errOut, code := execute(t, "helm-safe-upgrade", "app", "testdata/charts/crds-head", "-n", "demo", "--offline",
		"--from-chart", "testdata/charts/crds-base", "--skip-crds")
	if code != ExitBlocked {
		t.Fatalf("exit %d, want 2\n%s", code, errOut)
	}
	assertGolden(t, "crds.text", out)
}
