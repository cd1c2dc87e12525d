package watch

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
)

var deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

func fakeCluster(objs ...runtime.Object) (*live.Cluster, *dynamicfake.FakeDynamicClient) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		deploymentsGVR: "DeploymentList", podsGVR: "PodList", claimsGVR: "PersistentVolumeClaimList", eventsGVR: "EventList",
	}, objs...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	return &live.Cluster{Dynamic: dyn, Mapper: mapper}, dyn
}

func podObj(name, image, waitingReason string) *unstructured.Unstructured {
	cs := map[string]interface{}{"name": "web", "image": image, "ready": waitingReason == "",
		"state": map[string]interface{}{"running": map[string]interface{}{}}}
	phase, ready := "Running", "True"
	if waitingReason != "" {
		cs["state"] = map[string]interface{}{"waiting": map[string]interface{}{"reason": waitingReason, "message": "not found"}}
		phase, ready = "Pending", "False"
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]interface{}{"name": name, "namespace": "ns", "uid": "uid-" + name, "labels": map[string]interface{}{"app": "web"}},
		"status": map[string]interface{}{"phase": phase, "containerStatuses": []interface{}{cs},
			"conditions": []interface{}{map[string]interface{}{"type": "Ready", "status": ready}}},
	}}
}

// TestRun follows a Deployment through the fake cluster: the pods before
// the apply are read by Snapshot, the apply replaces them, Run sees the
// outcome.
func TestRun(t *testing.T) {
	spec := map[string]interface{}{"selector": selector, "replicas": int64(1)}
	rolled := map[string]interface{}{"replicas": int64(1), "updatedReplicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1),
		"conditions": []interface{}{map[string]interface{}{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
			map[string]interface{}{"type": "Available", "status": "True"}}}
	stuck := map[string]interface{}{"replicas": int64(2), "updatedReplicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1)}
	tests := []struct {
		name       string
		status     map[string]interface{}
		newPod     *unstructured.Unstructured
		oldGoes    bool
		wantState  string
		wantReason string
		wantPred   bool
	}{
		{"rolled", rolled, podObj("web-new", "nginx:1.26", ""), true, plan.StateCurrent, "", true},
		{"image cannot be pulled", stuck, podObj("web-new", "nginx:pull-error", "ImagePullBackOff"), false, plan.StateFailed,
			"pod web-new: image nginx:pull-error cannot be pulled (ImagePullBackOff): not found", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := workload("Deployment", spec, nil)
			before.SetNamespace("ns")
			cluster, dyn := fakeCluster(before, podObj("web-old", "nginx:1.25", ""))
			ch := plan.Change{ID: manifest.ObjectID{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web"}, APIVersion: "apps/v1",
				Action: plan.ActionUpdate, Class: plan.ClassRolling, Before: before, After: before}
			w := New(cluster, &plan.Plan{Changes: []plan.Change{ch, {ID: manifest.ObjectID{Kind: "ConfigMap", Name: "same"}, Action: plan.ActionNoop}}})
			ctx := context.Background()
			if err := w.Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
			// The apply.
			after := workload("Deployment", spec, tt.status)
			after.SetNamespace("ns")
			if _, err := dyn.Resource(deploymentsGVR).Namespace("ns").Update(ctx, after, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := dyn.Resource(podsGVR).Namespace("ns").Create(ctx, tt.newPod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if tt.oldGoes {
				if err := dyn.Resource(podsGVR).Namespace("ns").Delete(ctx, "web-old", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			var shown strings.Builder
			out, err := w.Run(ctx, time.Minute, NewProgress(&shown, false))
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Objects) != 1 {
				t.Fatalf("objects %+v, want the Deployment only (a noop is not followed)", out.Objects)
			}
			ob := out.Objects[0]
			if ob.State != tt.wantState || !strings.Contains(ob.Reason, tt.wantReason) || ob.AsPredicted != tt.wantPred {
				t.Errorf("outcome %+v, want state %s, reason with %q, as predicted %v", ob, tt.wantState, tt.wantReason, tt.wantPred)
			}
			if !strings.Contains(shown.String(), "Deployment.apps/ns/web: "+tt.wantState) {
				t.Errorf("progress does not show the Deployment %s:\n%s", tt.wantState, shown.String())
			}
		})
	}
}
