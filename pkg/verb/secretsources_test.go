package verb

import (
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/cli/values"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// TestAddCredentials: every password the run was given for a chart
// repository or a values URL is masked in what Helm says back, which
// quotes such a URL whole ("failed to fetch URL : 404 Not Found").
func TestAddCredentials(t *testing.T) {
	for _, tc := range []struct {
		name     string
		chartRef string
		opts     render.Options
		said     string
	}{
		{"--password", "app", render.Options{Repo: action.ChartPathOptions{Password: "hunter2!x"}}, "basic auth hunter2!x refused"},
		{"--repo", "app", render.Options{Repo: action.ChartPathOptions{RepoURL: "https://ci:hunter2%21x@h/charts"}}, `looks like "https://ci:hunter2%21x@h/charts" is not a valid chart repository`},
		{"CHART", "oci://ci:hunter2%21x@h/charts/app", render.Options{}, "failed to fetch oci://ci:hunter2%21x@h/charts/app : 404"},
		{"--values", "app", render.Options{Values: values.Options{ValueFiles: []string{"https://ci:hunter2%21x@h/v.yaml"}}}, "failed to fetch https://ci:hunter2%21x@h/v.yaml : 404"},
		{"--set-file", "app", render.Options{Values: values.Options{FileValues: []string{"a=./local.txt,b=https://ci:hunter2%21x@h/b.txt"}}}, "failed to fetch https://ci:hunter2%21x@h/b.txt : 404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Config{Sanitizer: redact.NewSanitizer(redact.NewMasker())}
			c.addCredentials(tc.chartRef, tc.opts)
			if got := c.Sanitizer.String(tc.said); strings.Contains(got, "hunter2") {
				t.Errorf("%q is said as %q", tc.said, got)
			}
		})
	}
}
