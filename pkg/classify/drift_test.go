package classify

import (
	"reflect"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// TestDrift: only fields the last release set are drift; a field the decoder
// fills with its zero value (a Service port's targetPort, an int-or-string
// struct that JSON never omits) is not the release's, so the server's
// default for it is not drift.
func TestDrift(t *testing.T) {
	svc := func(extra string) string {
		return "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  ports:\n  - port: 80\n" + extra
	}
	deploy := func(replicas string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: " + replicas + "\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: x}]}\n"
	}
	tests := []struct {
		name                              string
		original, live, target, predicted string
		want                              []plan.Drift
	}{
		{"defaulted targetPort is not drift",
			svc(""), svc("    targetPort: 80\n    protocol: TCP\n"), svc(""), svc("    targetPort: 80\n    protocol: TCP\n"), nil},
		{"edited targetPort the release set is drift, reverted",
			svc("    targetPort: 8080\n"), svc("    targetPort: 9090\n"), svc("    targetPort: 8080\n"), svc("    targetPort: 8080\n"),
			[]plan.Drift{{Path: "spec.ports[0].targetPort", Reverted: true}}},
		{"scaled replicas overwritten by the chart's new value",
			deploy("2"), deploy("5"), deploy("3"), deploy("3"),
			[]plan.Drift{{Path: "spec.replicas", Reverted: true}}},
		{"scaled replicas kept when the upgrade does not set them",
			deploy("2"), deploy("5"), deploy("2"), deploy("5"),
			[]plan.Drift{{Path: "spec.replicas"}}},
		{"scaled replicas reverted",
			deploy("2"), deploy("5"), deploy("2"), deploy("2"),
			[]plan.Drift{{Path: "spec.replicas", Reverted: true}}},
		{"no drift", deploy("2"), deploy("2"), deploy("2"), deploy("2"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Drift(obj(t, tt.original), obj(t, tt.live), obj(t, tt.target), obj(t, tt.predicted))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Drift = %+v, want %+v", got, tt.want)
			}
		})
	}
}
