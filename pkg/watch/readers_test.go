package watch

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/clusterfake"
)

// TestReaders: the readers the plan leaves running are checked against
// the apply's start: pods that predate it are as predicted (a stale
// reader's still on the old value), a pod started since differs, a reader
// that rolls or was restarted is the watch's, not checked here, and one
// that cannot be read is unknown.
func TestReaders(t *testing.T) {
	since := time.Date(2026, 12, 3, 11, 0, 0, 500, time.UTC)
	deployGVR := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	r := clusterfake.NewReader()
	r.AddKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, deployGVR, true)
	for _, name := range []string{"a", "c", "e"} {
		d := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "apps/v1", "kind": "Deployment",
			"spec": map[string]interface{}{"selector": map[string]interface{}{"matchLabels": map[string]interface{}{"app": name}}}}}
		d.SetNamespace("prod")
		d.SetName(name)
		r.Put(deployGVR, d)
	}
	pod := func(name, app string, created time.Time) {
		p := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Pod"}}
		p.SetNamespace("prod")
		p.SetName(name)
		p.SetLabels(map[string]string{"app": app})
		p.SetCreationTimestamp(metav1.NewTime(created))
		r.Put(live.PodsGVR, p)
	}
	pod("a-1", "a", since.Add(-time.Hour))
	pod("c-1", "c", since.Add(-time.Hour))
	pod("e-1", "e", since.Add(-time.Hour))
	pod("e-2", "e", since.Add(time.Minute)) // restarted by someone since
	dep := func(name string) manifest.ObjectID {
		return manifest.ObjectID{Group: "apps", Kind: "Deployment", Namespace: "prod", Name: name}
	}
	p := &plan.Plan{Changes: []plan.Change{{ID: manifest.ObjectID{Kind: "ConfigMap", Namespace: "prod", Name: "settings"}, Consumers: []plan.Consumer{
		{Workload: dep("a"), Via: plan.ViaEnvFrom, Sees: plan.SightStale},
		{Workload: dep("a"), Via: plan.ViaEnv, Key: "k", Sees: plan.SightUnaffected},
		{Workload: dep("b"), Via: plan.ViaEnvFrom, Sees: plan.SightRestarted},
		{Workload: dep("c"), Via: plan.ViaVolume, Sees: plan.SightFile},
		{Workload: dep("d"), Via: plan.ViaEnvFrom, Sees: plan.SightRolls},
		{Workload: dep("e"), Via: plan.ViaSubPath, Key: "k", Sees: plan.SightStale},
		{Workload: dep("gone"), Via: plan.ViaEnvFrom, Sees: plan.SightStale},
	}}}}
	want := []plan.ObjectOutcome{
		{ID: dep("a"), State: plan.StateCurrent, AsPredicted: true, PodsBefore: 1, PodsKept: 1,
			Predicted: "no pod replaced; running pods keep the old value of ConfigMap settings until they restart",
			Observed:  "1 of 1 pod(s) started before the upgrade: still on the old value", Detail: "1 pod(s) running, not replaced by the upgrade"},
		{ID: dep("c"), State: plan.StateCurrent, AsPredicted: true, PodsBefore: 1, PodsKept: 1,
			Predicted: "no pod replaced; the kubelet updates the files of ConfigMap settings in place",
			Observed:  "1 of 1 pod(s) started before the upgrade", Detail: "1 pod(s) running, not replaced by the upgrade"},
		{ID: dep("e"), State: plan.StateCurrent, AsPredicted: false, PodsBefore: 2, PodsKept: 1,
			Predicted: "no pod replaced; running pods keep the old value of ConfigMap settings until they restart",
			Observed:  "1 of 2 pod(s) started before the upgrade: still on the old value", Detail: "2 pod(s) running, not replaced by the upgrade"},
		{ID: dep("gone"), State: plan.StateUnknown, Reason: "reading Deployment.apps/prod/gone: not found"},
	}
	got := Readers(context.Background(), r, p, since)
	if len(got) != len(want) {
		t.Fatalf("got %d outcomes, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("outcome %d:\ngot  %+v\nwant %+v", i, got[i], want[i])
		}
	}
}
