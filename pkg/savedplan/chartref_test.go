package savedplan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// TestSavedPlanChartURLPassword: a saved plan is a file kept and passed
// between jobs; a chart named by a URL with a password keeps the URL,
// its password redacted, in the file and in what it says.
func TestSavedPlanChartURLPassword(t *testing.T) {
	res := &render.Result{Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "app", Version: "1.0.0"}},
		Next: &release.Release{Name: "app", Namespace: "prod", Info: &release.Info{}}}
	change := plan.Change{ID: manifest.ObjectID{Kind: "ConfigMap", Namespace: "prod", Name: "a"}, Action: plan.ActionUpdate,
		Class: plan.ClassInPlace, Before: &unstructured.Unstructured{Object: map[string]interface{}{"kind": "ConfigMap"}}}
	src := Source{Plan: &plan.Plan{Release: plan.Release{Name: "app", Namespace: "prod"}, Changes: []plan.Change{change}}, Rendered: res,
		ChartRef: "https://ci:hunter2@charts.example.com/app-1.0.0.tgz", Render: render.Options{Namespace: "prod"},
		Cluster: here, Created: planned, MaskKey: []byte("0123456789abcdef"), Reports: map[string]string{"text": "report\n"}}
	path := filepath.Join(t.TempDir(), "plan")
	if err := Write(path, New(src), clear); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Verify(path, clear, "app", "prod")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "hunter2") || s.ChartRef != "https://ci:xxxxx@charts.example.com/app-1.0.0.tgz" {
		t.Errorf("saved chart %q; the file holds the password: %v", s.ChartRef, strings.Contains(string(b), "hunter2"))
	}
}
