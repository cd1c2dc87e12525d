package classify

import (
	"fmt"
	"reflect"
	"strings"
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

// TestDriftWithin checks Drift's shortcut: within may answer "no drift"
// only where the full comparison finds none, and answers it for the common
// case of a live object that holds the release's fields and more.
func TestDriftWithin(t *testing.T) {
	deploy := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, labels: {a: b}}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: x, resources: {limits: {memory: %s}}}]}\n"
	liveDeploy := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, labels: {a: b}, resourceVersion: \"7\", generation: 3, managedFields: [{manager: helm}]}\nspec:\n  replicas: 2\n  progressDeadlineSeconds: 600\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: x, imagePullPolicy: Always, resources: {limits: {memory: %s}}}], restartPolicy: Always}\nstatus: {replicas: 2}\n"
	secret := "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n%s\n"
	svc := "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  ports:\n%s"
	tests := []struct {
		name           string
		original, live string
		within         bool
	}{
		{"defaults and server fields added", fmt.Sprintf(deploy, "1Gi"), fmt.Sprintf(liveDeploy, "1Gi"), true},
		{"a value edited", fmt.Sprintf(deploy, "1Gi"), fmt.Sprintf(liveDeploy, "2Gi"), false},
		{"the same quantity written differently", fmt.Sprintf(deploy, "1024Mi"), fmt.Sprintf(liveDeploy, "1Gi"), false},
		{"a label removed", fmt.Sprintf(deploy, "1Gi"), strings.Replace(fmt.Sprintf(liveDeploy, "1Gi"), "labels: {a: b}, ", "", 1), false},
		{"a list grown", fmt.Sprintf(svc, "  - port: 80\n"), fmt.Sprintf(svc, "  - port: 80\n  - port: 81\n"), false},
		{"a list element defaulted", fmt.Sprintf(svc, "  - port: 80\n"), fmt.Sprintf(svc, "  - {port: 80, targetPort: 80, protocol: TCP}\n"), true},
		{"an int where a string was", fmt.Sprintf(svc, "  - {port: 80, targetPort: \"80\"}\n"), fmt.Sprintf(svc, "  - {port: 80, targetPort: 80}\n"), false},
		{"stringData folded into data", fmt.Sprintf(secret, "stringData: {pw: secret}"), fmt.Sprintf(secret, "type: Opaque\ndata: {pw: c2VjcmV0}"), true},
		{"stringData changed live", fmt.Sprintf(secret, "stringData: {pw: secret}"), fmt.Sprintf(secret, "data: {pw: b3RoZXI=}"), false},
		{"a data key removed live", fmt.Sprintf(secret, "data: {a: YQ==, b: Yg==}"), fmt.Sprintf(secret, "data: {a: YQ==}"), false},
		{"a data key added live", fmt.Sprintf(secret, "data: {a: YQ==}"), fmt.Sprintf(secret, "data: {a: YQ==, b: Yg==}"), true},
		{"a null the release set, absent live", fmt.Sprintf(svc, "  - port: 80\n") + "  clusterIP: null\n", fmt.Sprintf(svc, "  - port: 80\n"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			original, live := obj(t, tt.original), obj(t, tt.live)
			if got := within(original, live); got != tt.within {
				t.Errorf("within = %v, want %v", got, tt.within)
			}
			full := drift(original, live, original, live)
			if tt.within && len(full) > 0 {
				t.Errorf("within says no drift, the full comparison finds %+v", full)
			}
			if got := Drift(original, live, original, live); len(got)+len(full) > 0 && !reflect.DeepEqual(got, full) {
				t.Errorf("Drift = %+v, the full comparison %+v", got, full)
			}
		})
	}
}
