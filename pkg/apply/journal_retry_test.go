package apply

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// TestRestoreManagersRetriesConflicts: an update that conflicts (a
// controller wrote the object meanwhile) is retried on the object read
// again, a bounded number of times; any other error ends it at once.
func TestRestoreManagersRetriesConflicts(t *testing.T) {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	managers := []metav1.ManagedFieldsEntry{{Manager: "helm", Operation: metav1.ManagedFieldsOperationApply}}
	tests := []struct {
		name      string
		conflicts int   // updates refused with a conflict before one passes
		other     error // what the first update fails with instead, if set
		updates   int
		gets      int
		conflict  bool // the error returned is a conflict
		fails     bool
	}{
		{name: "no conflict", updates: 1},
		{name: "two conflicts", conflicts: 2, updates: 3, gets: 2},
		{name: "always conflicting", conflicts: 100, updates: 5, gets: 4, fails: true, conflict: true},
		{name: "forbidden", other: apierrors.NewForbidden(gvr.GroupResource(), "cm", errors.New("no")), updates: 1, fails: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cm := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]interface{}{"name": "cm", "namespace": relNS}}}
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ConfigMapList"}, cm.DeepCopy())
			updates, gets := 0, 0
			client.PrependReactor("get", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
				gets++
				return false, nil, nil
			})
			client.PrependReactor("update", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
				updates++
				switch {
				case tt.other != nil:
					return true, nil, tt.other
				case updates <= tt.conflicts:
					return true, nil, apierrors.NewConflict(gvr.GroupResource(), "cm", errors.New("the object has been modified"))
				}
				return false, nil, nil
			})
			res := client.Resource(gvr).Namespace(relNS)
			err := restoreManagers(context.Background(), res, cm, managers)
			if (err != nil) != tt.fails || apierrors.IsConflict(err) != tt.conflict {
				t.Fatalf("error %v, want failure %v (conflict %v)", err, tt.fails, tt.conflict)
			}
			if updates != tt.updates || gets != tt.gets {
				t.Errorf("%d updates and %d reads, want %d and %d", updates, gets, tt.updates, tt.gets)
			}
			if tt.fails {
				return
			}
			got, err := res.Get(context.Background(), "cm", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if m := got.GetManagedFields(); len(m) != 1 || m[0].Manager != "helm" {
				t.Errorf("managers on the object: %+v", m)
			}
		})
	}
}
