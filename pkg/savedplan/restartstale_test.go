package savedplan

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// TestSavedPlanPinsRestarts: a plan saved with --restart-stale records the
// workloads it restarts, through the file; it is applied with the flag
// only (and one saved without it, without it), and refused when the plan
// made at apply time would restart other workloads.
func TestSavedPlanPinsRestarts(t *testing.T) {
	dep := func(name string, restartedFor ...string) plan.Change {
		return plan.Change{ID: manifest.ObjectID{Group: "apps", Kind: "Deployment", Namespace: "prod", Name: name}, Action: plan.ActionUpdate,
			Class: plan.ClassRolling, RestartedFor: restartedFor, Before: &unstructured.Unstructured{Object: map[string]interface{}{"kind": "Deployment"}}}
	}
	p := &plan.Plan{Release: plan.Release{Name: "app", Namespace: "prod"}, Changes: []plan.Change{dep("a", "ConfigMap settings"), dep("b", "ConfigMap settings"), dep("d")}}
	opts := render.Options{Namespace: "prod"}
	res := &render.Result{Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "app", Version: "1.0.0"}},
		Next: &release.Release{Name: "app", Namespace: "prod", Info: &release.Info{}}}
	path := filepath.Join(t.TempDir(), "plan")
	if err := Write(path, New(Source{Plan: p, Rendered: res, Render: opts, RestartStale: true, Cluster: here, Created: planned, MaskKey: []byte("0123456789abcdef"), Reports: map[string]string{"text": "report\n"}}), clear); err != nil {
		t.Fatal(err)
	}
	s, err := Verify(path, clear, "app", "prod")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Deployment.apps/prod/a", "Deployment.apps/prod/b"}; !slices.Equal(s.Restart, want) {
		t.Errorf("restarts recorded %v, want %v", s.Restart, want)
	}
	for _, tc := range []struct {
		restart bool
		want    string
	}{
		{true, ""},
		{false, "saved plan was made with RestartStale=true, this run has <nil>"},
	} {
		err := s.check(here, withRestart(ApplyFlags(opts, false), tc.restart), planned, 0)
		if got := errString(err); !strings.Contains(got, tc.want) || (tc.want == "") != (err == nil) {
			t.Errorf("--restart-stale %v: error %q, want %q", tc.restart, got, tc.want)
		}
	}
	if err := s.unmoved(p); err != nil {
		t.Errorf("the same restarts: %v", err)
	}
	now := *p
	now.Changes = []plan.Change{dep("a", "ConfigMap settings"), dep("b"), dep("d")}
	if err := s.unmoved(&now); err == nil || !strings.Contains(err.Error(), "it restarts [Deployment.apps/prod/a, Deployment.apps/prod/b] after the upgrade (--restart-stale), a plan now would restart [Deployment.apps/prod/a]") {
		t.Errorf("other restarts: error %v, want the plan refused naming both sets", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
