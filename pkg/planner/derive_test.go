package planner

import (
	"context"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/clusterfake"
)

const derivedLive = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: ns
  resourceVersion: "42"
  annotations: {meta.helm.sh/release-name: r, meta.helm.sh/release-namespace: ns}
  labels: {app.kubernetes.io/managed-by: Helm, helm.sh/chart: app-1}
data: {mode: a}
`

func settings(chart, mode string) string {
	return "---\n# Source: app/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, labels: {helm.sh/chart: " + chart + "}}\ndata: {mode: " + mode + "}\n"
}

// TestDeriveOrAsk is the planner's side of derivation: which updates are
// sent to the server, and that a derived verdict is the one the server's
// answer gives.
func TestDeriveOrAsk(t *testing.T) {
	tests := []struct {
		name     string
		next     string
		mode     ServerDryRun
		observed string
		// asked: a dry-run patch is sent.
		asked bool
	}{
		{name: "chart bump, nothing else sees it", next: settings("app-2", "a")},
		{name: "chart bump, --server-dry-run=all", next: settings("app-2", "a"), mode: ServerDryRunAll, asked: true},
		{name: "chart bump seen by a webhook", next: settings("app-2", "a"), observed: "ValidatingWebhookConfiguration w", asked: true},
		{name: "data changes", next: settings("app-1", "b")},
		{name: "data and chart change", next: settings("app-2", "b")},
		{name: "data changes seen by a policy", next: settings("app-1", "b"), observed: "ValidatingAdmissionPolicy p", asked: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, cl := planDerived(t, tc.next, tc.mode, tc.observed)
			if asked := cl.Patches > 0; asked != tc.asked {
				t.Fatalf("%d dry-run patches, want asked=%v", cl.Patches, tc.asked)
			}
			want := plan.PredictionDerived
			if tc.asked {
				want = plan.PredictionServer
			}
			if got.Prediction != want {
				t.Errorf("prediction %q, want %q", got.Prediction, want)
			}
			if tc.asked {
				return
			}
			// The same plan with the server asked gives the same verdict.
			server, _ := planDerived(t, tc.next, ServerDryRunAll, "")
			if got.Reasons[0].Source != plan.SourceDerived || server.Reasons[0].Source != plan.SourceServer {
				t.Errorf("sources %q and %q", got.Reasons[0].Source, server.Reasons[0].Source)
			}
			for _, c := range []*plan.Change{&got, &server} {
				c.Prediction = ""
				for i := range c.Reasons {
					c.Reasons[i].Source = ""
				}
			}
			if !reflect.DeepEqual(got, server) {
				t.Errorf("derived and server verdicts differ:\nderived %+v\nserver  %+v", got, server)
			}
		})
	}
}

// TestDerivePoliciesSee: the validating policies are asked about the update
// the dry-run would send, the derived object over the live one, and their
// answer alone sends it to the server.
func TestDerivePoliciesSee(t *testing.T) {
	for _, answer := range []string{"", "ValidatingAdmissionPolicy p refuses or warns"} {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(derivedLive), &obj.Object); err != nil {
			t.Fatal(err)
		}
		srv := &clusterfake.Server{Live: obj, MergePatches: true}
		c := ssaCluster(srv)
		policies := &clusterfake.Policies{Answer: answer}
		c.Observers = policies
		p := New(c, "v1.37.2")
		p.Stats = &Stats{}
		out, err := p.Plan(context.Background(), Input{
			Release:          plan.Release{Name: "r", Namespace: "ns", ApplyMethod: plan.ApplyMethodCSA},
			PreviousManifest: settings("app-1", "a"), NextManifest: settings("app-2", "a"),
		})
		if err != nil {
			t.Fatal(err)
		}
		if asked := srv.Patches > 0; asked != (answer != "") {
			t.Errorf("policies answer %q: %d dry-run patches", answer, srv.Patches)
		}
		if len(policies.Asked) != 1 {
			t.Fatalf("PoliciesAdmit asked %d times, want once", len(policies.Asked))
		}
		a := policies.Asked[0]
		if a.Stored.GetLabels()["helm.sh/chart"] != "app-2" || a.Old.GetLabels()["helm.sh/chart"] != "app-1" || a.Apply {
			t.Errorf("asked about %v over %v (apply %v), want the derived object over the live one, Helm 3's patch",
				a.Stored.GetLabels(), a.Old.GetLabels(), a.Apply)
		}
		if want := map[bool]plan.Prediction{true: plan.PredictionDerived, false: plan.PredictionServer}[answer == ""]; out.Changes[0].Prediction != want {
			t.Errorf("policies answer %q: prediction %q, want %q", answer, out.Changes[0].Prediction, want)
		}
	}
}

// patchCluster is an API server holding obj, answering a dry-run patch by
// applying it as the server's strategic merge does; observed is what
// Observed answers.
func patchCluster(obj *unstructured.Unstructured, observed string) (Cluster, *clusterfake.Server) {
	srv := &clusterfake.Server{Live: obj, MergePatches: true}
	c := ssaCluster(srv)
	c.Observers = clusterfake.Observed(observed)
	return c, srv
}

func planDerived(t *testing.T, next string, mode ServerDryRun, observed string) (plan.Change, *clusterfake.Server) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(derivedLive), &obj.Object); err != nil {
		t.Fatal(err)
	}
	c, cl := patchCluster(obj, observed)
	p := New(c, "v1.37.2")
	p.ServerDryRun = mode
	p.Stats = &Stats{}
	out, err := p.Plan(context.Background(), Input{
		Release:          plan.Release{Name: "r", Namespace: "ns", ApplyMethod: plan.ApplyMethodCSA},
		PreviousManifest: settings("app-1", "a"), NextManifest: next,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Changes) != 1 {
		t.Fatalf("changes %+v", out.Changes)
	}
	return out.Changes[0], cl
}
