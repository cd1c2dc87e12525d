package planner

import (
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestDryRunReplaceAfterAWrite: Helm's --force PUT carries the version it
// reads just before it, so an object a controller wrote since the plan
// read it (a Job's status, every few seconds under a controller) is no
// conflict for Helm. The plan's dry-run PUT given the version it read
// before that write must answer as Helm's PUT would — accepted here —
// not with the conflict, which the planner takes for "not checked" and
// which once let a Job's refused PUT through the gate.
func TestDryRunReplaceAfterAWrite(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	l := Live{Cluster: liveCluster(t, c)}
	apply(t, l.Dynamic, ns, "configmaps", "cm", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"},"data":{"key":"a"}}`, "helm")
	obj := ssaObject(t, ssaConfigMap, ns)
	read, err := l.Lookup(t.Context(), obj.GVK, ns, "cm")
	if err != nil || read == nil {
		t.Fatalf("reading the ConfigMap: %v", err)
	}
	// Another writer after the plan's read.
	apply(t, l.Dynamic, ns, "configmaps", "cm", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{"seen":"later"}}}`, "controller")
	got, err := l.DryRunReplace(t.Context(), obj, read.GetResourceVersion())
	if err != nil {
		t.Fatalf("dry-run PUT with the version read before another write: %v, want it asked again with the current version and accepted", err)
	}
	if got.GetLabels()["seen"] != "" || got.Object["data"].(map[string]interface{})["other"] != "b" {
		t.Errorf("the dry-run PUT's answer is not the render replacing the object: %v", got.Object)
	}
}
