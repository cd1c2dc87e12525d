package live

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

var configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

func liveConfigMap(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": name, "namespace": ns, "managedFields": []interface{}{map[string]interface{}{"manager": "helm"}}},
		"data":     map[string]interface{}{"k": name},
	}}
}

func configMapObject(ns, name string) *manifest.Object {
	return &manifest.Object{ID: manifest.ObjectID{Kind: "ConfigMap", Namespace: ns, Name: name}, GVK: configMapGVK}
}

func configMapCluster(objs ...runtime.Object) (*Cluster, *dynamicfake.FakeDynamicClient) {
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	m.Add(configMapGVK, meta.RESTScopeNamespace)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMaps: "ConfigMapList"}, objs...)
	return &Cluster{Dynamic: dyn, Mapper: m}, dyn
}

// TestPrefetchFromEarly: a Prefetch that takes its groups from LISTs started
// before it knew its objects returns the same states as one that LISTs
// them itself, and sends no LIST again for the groups listed early.
func TestPrefetchFromEarly(t *testing.T) {
	var live []runtime.Object
	var last []manifest.Head // the last release: a0..a9 in ns a, b0..b2 in ns b
	for i := range 10 {
		live = append(live, liveConfigMap("a", fmt.Sprintf("a%d", i)))
		last = append(last, manifest.Head{GVK: configMapGVK, Namespace: "a", Name: fmt.Sprintf("a%d", i)})
	}
	for i := range 3 {
		last = append(last, manifest.Head{GVK: configMapGVK, Namespace: "b", Name: fmt.Sprintf("b%d", i)})
	}
	// Objects the new render adds: one that exists (adopted), one that does
	// not, and enough in namespace c for a LIST of their own.
	live = append(live, liveConfigMap("a", "adopted"), liveConfigMap("c", "c0"), liveConfigMap("a", "other-release"))
	objs := []*manifest.Object{configMapObject("a", "adopted"), configMapObject("a", "new")}
	for _, h := range last {
		objs = append(objs, configMapObject(h.Namespace, h.Name))
	}
	for i := range MinListGroup {
		objs = append(objs, configMapObject("c", fmt.Sprintf("c%d", i)))
	}
	all := func(*manifest.Object) bool { return true }
	a0 := manifest.ObjectID{Kind: "ConfigMap", Namespace: "a", Name: "a0"}
	adopted := manifest.ObjectID{Kind: "ConfigMap", Namespace: "a", Name: "adopted"}
	butA0 := func(o *manifest.Object) bool { return o.ID != a0 }
	tests := []struct {
		name string
		// earlyLean cuts managedFields as the early LISTs arrive; lean is
		// Prefetch's.
		earlyLean bool
		lean      Lean
		// left are the objects left for Get; lists the namespaces Prefetch
		// lists itself.
		left  []manifest.ObjectID
		lists []string
	}{
		{name: "whole objects", left: []manifest.ObjectID{adopted}, lists: []string{"c"}},
		{name: "whole objects, lean but for a0", lean: butA0, left: []manifest.ObjectID{adopted}, lists: []string{"c"}},
		{name: "lean", earlyLean: true, lean: all, left: []manifest.ObjectID{adopted}, lists: []string{"c"}},
		{name: "lean early, a0 wanted whole: left for Get", earlyLean: true, lean: butA0, left: []manifest.ObjectID{adopted, a0}, lists: []string{"c"}},
		{name: "lean early, all wanted whole: listed again", earlyLean: true, lists: []string{"a", "c"}},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plainCluster, _ := configMapCluster(live...)
			want := decoded(plainCluster.Prefetch(ctx, objs, MinListGroup, tt.lean, nil))

			c, dyn := configMapCluster(live...)
			early := c.StartPrefetch(ctx, last, MinListGroup, tt.earlyLean)
			early.Wait()
			if early.Lists() != 1 || early.Requests() != 1 {
				t.Fatalf("early: %d list(s), %d request(s); want 1 of namespace a (b holds too few)", early.Lists(), early.Requests())
			}
			dyn.ClearActions()
			got := decoded(c.Prefetch(ctx, objs, MinListGroup, tt.lean, early))
			for id, st := range got {
				if st.Obj == nil {
					continue
				}
				_, has, _ := unstructured.NestedSlice(st.Obj.Object, "metadata", "managedFields")
				if wantFields := tt.lean == nil || !tt.lean(configMapObject(id.Namespace, id.Name)); has != wantFields {
					t.Errorf("%s: managedFields kept %v, want %v", id, has, wantFields)
				}
			}

			for _, id := range tt.left {
				if _, ok := got[id]; ok {
					t.Errorf("%s must be left for Get", id)
				}
				delete(want, id)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("states from the early LIST differ:\n got %v\nwant %v", got, want)
			}
			var lists []string
			for _, a := range dyn.Actions() {
				lists = append(lists, a.GetNamespace())
			}
			slices.Sort(lists)
			if !reflect.DeepEqual(lists, tt.lists) {
				t.Errorf("LISTs after the early ones: %v, want %v", lists, tt.lists)
			}
		})
	}
}

// decoded decodes every state.
func decoded(states map[manifest.ObjectID]State) map[manifest.ObjectID]State {
	out := make(map[manifest.ObjectID]State, len(states))
	for id, st := range states {
		out[id] = st.Decode()
	}
	return out
}
