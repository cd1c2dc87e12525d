package verb

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// TestUninstallLeftovers: after Helm's uninstall, each planned deletion
// still in the cluster is named with why (Terminating on its finalizers,
// not deleted, changed since the plan); those gone, and noops, are not.
func TestUninstallLeftovers(t *testing.T) {
	cm := func(name, version string, finalizers []string, deleting bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "prod", "resourceVersion": version}}}
		u.SetFinalizers(finalizers)
		if deleting {
			ts := metav1.NewTime(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
			u.SetDeletionTimestamp(&ts)
		}
		return u
	}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(gvk, meta.RESTScopeNamespace)
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(),
		cm("held", "u1", []string{"example.com/hold"}, true), cm("failed", "u2", nil, false), cm("again", "u9", nil, false), cm("kept", "u4", nil, false))
	c := &Config{Cluster: &live.Cluster{Dynamic: client, Mapper: mapper}, Sanitizer: redact.NewSanitizer(redact.NewMasker())}
	change := func(name, version string, action plan.Action) plan.Change {
		return plan.Change{ID: manifest.ObjectID{Kind: "ConfigMap", Namespace: "prod", Name: name}, APIVersion: "v1", Action: action, LiveResourceVersion: version}
	}
	p := &plan.Plan{Changes: []plan.Change{
		change("held", "u1", plan.ActionDelete), change("failed", "u2", plan.ActionDelete), change("gone", "u3", plan.ActionDelete),
		change("again", "u5", plan.ActionDelete), change("kept", "u4", plan.ActionNoop),
	}}
	// A timeout under the settling time: the rounds end with it.
	gone, still, err := c.remaining(context.Background(), p, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(gone) != 1 || gone[0].Name != "gone" {
		t.Errorf("gone: %v, want the ConfigMap gone", gone)
	}
	var got []string
	for _, r := range still {
		got = append(got, r.String())
	}
	want := []string{
		"ConfigMap/prod/again: not being deleted, and changed since the plan (created again, or its delete did not take)",
		"ConfigMap/prod/failed: not deleted",
		"ConfigMap/prod/held: Terminating since 2026-12-03T09:00:00Z, held by the finalizer(s) example.com/hold",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("remaining:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestUninstallCounts (issue 54): what an uninstall says, on a terminal,
// before Helm starts: the objects it deletes, how many are destructive,
// how many it leaves.
func TestUninstallCounts(t *testing.T) {
	del := func(destructive bool) plan.Change {
		return plan.Change{Action: plan.ActionDelete, Destructive: destructive}
	}
	for _, tt := range []struct {
		changes []plan.Change
		left    []string
		want    string
	}{
		{[]plan.Change{del(false), del(false), {Action: plan.ActionNoop}}, nil, "deleting 2 object(s), none destructive"},
		{[]plan.Change{del(true), del(false)}, []string{"a", "b"}, "deleting 2 object(s), 1 destructive, acknowledged; 2 left in the cluster"},
	} {
		if got := uninstallCounts(&PlannedUninstall{Plan: &plan.Plan{Changes: tt.changes}, Left: tt.left}); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}
