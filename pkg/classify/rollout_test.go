package classify

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// TestRolloutImpact covers the strategies whose impact differs: paused
// Deployments, StatefulSet partitions, OnDelete, DaemonSet surge.
func TestRolloutImpact(t *testing.T) {
	tests := []struct {
		kind, spec string
		replicas   int64
		strategy   string
		impact     string
	}{
		{"Deployment", "replicas: 3", 3, "RollingUpdate", "3 pod(s) replaced gradually (maxUnavailable 25%, maxSurge 25%)"},
		{"Deployment", "replicas: 3\npaused: true", 3, "RollingUpdate", "rollout deferred: the Deployment is paused; its 3 pod(s) are replaced when it is resumed"},
		{"Deployment", "replicas: 2\nstrategy: {type: Recreate}", 2, "Recreate", "all 2 pod(s) are stopped before new ones start (Recreate strategy): downtime"},
		{"StatefulSet", "replicas: 5\nupdateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 3}}", 5, "RollingUpdate",
			"2 of 5 pod(s) replaced one at a time in reverse ordinal order (partition 3: lower ordinals keep the old template)"},
		{"StatefulSet", "replicas: 2\nupdateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 4}}", 2, "RollingUpdate", "0 of 2 pod(s) replaced"},
		{"StatefulSet", "replicas: 3\nupdateStrategy: {type: OnDelete}", 3, "OnDelete", "pods keep the old template until each is deleted (OnDelete); 3 pod(s) affected"},
		{"DaemonSet", "updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 0, maxSurge: 1}}", 0, "RollingUpdate",
			"pods replaced node by node (maxUnavailable 0, maxSurge 1)"},
		{"DaemonSet", "updateStrategy: {type: OnDelete}", 0, "OnDelete", "pods keep the old template until each is deleted (OnDelete)"},
	}
	for _, tt := range tests {
		t.Run(tt.kind+" "+strings.ReplaceAll(tt.spec, "\n", " "), func(t *testing.T) {
			var spec map[string]interface{}
			if err := yaml.Unmarshal([]byte(tt.spec), &spec); err != nil {
				t.Fatal(err)
			}
			r := Rollout(schema.GroupKind{Group: "apps", Kind: tt.kind}, map[string]interface{}{"spec": spec})
			if r.Replicas != tt.replicas || r.Strategy != tt.strategy || !strings.HasPrefix(r.Impact, tt.impact) {
				t.Errorf("got %+v\nwant replicas %d strategy %s impact %q", r, tt.replicas, tt.strategy, tt.impact)
			}
		})
	}
}
