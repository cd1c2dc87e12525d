package planner

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/clusterfake"
)

const webDeployment = `---
# Source: app/templates/web.yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "%s"}]}
`

func TestRolloutBudgets(t *testing.T) {
	web := labels.SelectorFromSet(labels.Set{"app": "web"})
	tests := []struct {
		name    string
		budgets []live.Budget
		want    string // in a note; "" means no budget note
	}{
		{"budget at zero", []live.Budget{{Name: "web", Selector: web}}, "PodDisruptionBudget web covers these pods and allows 0 disruption(s) now: the rollout itself is not blocked by it (workload controllers delete the pods they replace, they do not evict them), but evictions are refused while it allows none, so a node drain during the rollout waits"},
		{"budget with room", []live.Budget{{Name: "web", Selector: web, DisruptionsAllowed: 1}}, "allows 1 disruption(s) now; the rollout does not consult it"},
		{"budget for other pods", []live.Budget{{Name: "db", Selector: labels.SelectorFromSet(labels.Set{"app": "db"})}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster := Offline{Release: "app", Namespace: "prod"}.Parts()
			cluster.Budgets = clusterfake.Budgets(tt.budgets)
			p, err := New(cluster, "").Plan(context.Background(), Input{
				Release:          plan.Release{Name: "app", Namespace: "prod"},
				PreviousManifest: strings.Replace(webDeployment, "%s", "nginx:1", 1), NextManifest: strings.Replace(webDeployment, "%s", "nginx:2", 1),
			})
			if err != nil {
				t.Fatal(err)
			}
			c := p.Changes[0]
			if c.Class != plan.ClassRolling {
				t.Fatalf("want a rolling update, got %+v", c)
			}
			notes := strings.Join(c.Notes, "\n")
			if tt.want == "" && strings.Contains(notes, "PodDisruptionBudget") || tt.want != "" && !strings.Contains(notes, tt.want) {
				t.Errorf("notes %q, want %q", notes, tt.want)
			}
		})
	}
}
