package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/filetree"
)

// TestGitOpsChartLinkOutside: a chart folder of the checkout whose file
// links to the runner's environment (a template printing it with
// .Files.Get) is refused, exit 1, naming the link and the field; the
// environment is in no output.
func TestGitOpsChartLinkOutside(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc/self/environ here")
	}
	const canary = "gitfs-canary-7d1e9"
	t.Setenv("FAKE_GITHUB_TOKEN", canary)
	side := func(x string) string {
		dir := filetree.Write(t, map[string]string{
			"charts/app/Chart.yaml":        "apiVersion: v2\nname: app\nversion: 0.1.0\n",
			"charts/app/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata:\n  v: {{ .Values.x | quote }}\n  leak: {{ .Files.Get \"token\" | quote }}\n",
			"hr.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: repo, namespace: flux-system}\nspec: {url: \"https://example.com/x.git\"}\n---\n" +
				"apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: app, namespace: flux-system}\nspec:\n  chart: {spec: {chart: ./charts/app, sourceRef: {kind: GitRepository, name: repo}}}\n  values: {x: " + x + "}\n",
		})
		filetree.Link(t, dir, "charts/app/token", "/proc/self/environ")
		return dir
	}
	base, head := side("base"), side("head")
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			out, errOut, code := execute(t, "helm-safe-upgrade", "gitops", base, head, "-o", format)
			if code != ExitError {
				t.Fatalf("exit %d, want 1\n%s\n%s", code, errOut, out)
			}
			for _, w := range []string{"HelmRelease flux-system/app", "spec.chart.spec.chart: charts/app/token is a symbolic link leading outside the checkout"} {
				if !strings.Contains(errOut, w) {
					t.Errorf("error does not say %q:\n%s", w, errOut)
				}
			}
			if strings.Contains(out+errOut, canary) {
				t.Errorf("the runner's environment is in the output:\n%s\n%s", out, errOut)
			}
		})
	}
}
