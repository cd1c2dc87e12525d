package live

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

// TestReadInventory: one LIST per kind in every namespace, keeping what
// keep chooses (with the metadata it chooses by), and a kind the cluster
// does not serve recorded as failed rather than failing the others.
func TestReadInventory(t *testing.T) {
	cm := func(ns, name string, labels map[string]string, controlled bool) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": ns}, "data": map[string]any{"k": name}}}
		u.SetLabels(labels)
		if controlled {
			yes := true
			u.Object["metadata"].(map[string]any)["ownerReferences"] = []any{map[string]any{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "u", "controller": yes}}
		}
		return u
	}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	missing := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(gvk, meta.RESTScopeNamespace)
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{{Version: "v1", Resource: "configmaps"}: "ConfigMapList"},
		cm("a", "one", nil, false), cm("b", "two", map[string]string{"keep": "yes"}, false), cm("b", "three", map[string]string{"keep": "yes"}, true), cm("c", "four", nil, false))
	c := &Cluster{Dynamic: client, Mapper: mapper}
	var seen []ItemMeta
	inv := c.ReadInventory(context.Background(), []schema.GroupVersionKind{gvk, missing}, "", 2, func(m ItemMeta) bool {
		seen = append(seen, m)
		return m.ID.Name == "one" || m.Labels["keep"] == "yes" && !m.Controlled
	})
	if len(seen) != 4 {
		t.Fatalf("keep saw %d items, want the 4 of every namespace: %+v", len(seen), seen)
	}
	if inv.Requests != 1 {
		t.Errorf("%d LIST request(s), want 1", inv.Requests)
	}
	if inv.Failed(gvk.GroupKind()) != nil || inv.Failed(missing.GroupKind()) == nil {
		t.Errorf("failed: ConfigMap %v, Widget %v; want only Widget", inv.Failed(gvk.GroupKind()), inv.Failed(missing.GroupKind()))
	}
	ids := inv.IDs()
	want := []manifest.ObjectID{{Kind: "ConfigMap", Namespace: "a", Name: "one"}, {Kind: "ConfigMap", Namespace: "b", Name: "two"}}
	if len(ids) != 2 || ids[0] != want[0] || ids[1] != want[1] {
		t.Fatalf("kept %v, want %v", ids, want)
	}
	// A state can be handed out more than once, decoded afresh each time.
	for range 2 {
		st := inv.State(want[1]).Decode()
		if st.Err != nil || st.Obj == nil || st.Obj.GetKind() != "ConfigMap" || st.Obj.Object["data"].(map[string]any)["k"] != "two" {
			t.Fatalf("state of %v: %+v", want[1], st)
		}
	}
	if st := inv.State(manifest.ObjectID{Kind: "ConfigMap", Namespace: "c", Name: "four"}); st.Decode().Obj != nil {
		t.Errorf("an object not kept is absent, got %v", st.Decode().Obj)
	}
}
