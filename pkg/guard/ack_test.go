package guard

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/clusterfake"
)

var (
	pvcGVK = schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolumeClaim"}
	pvGVK  = schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolume"}
	stsGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	cmGVK  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
)

func TestGuards(t *testing.T) {
	pv := func(policy string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"persistentVolumeReclaimPolicy": policy}}}
	}
	empty := &unstructured.Unstructured{Object: map[string]any{}}
	tests := []struct {
		name   string
		kind   schema.GroupKind
		obj    *unstructured.Unstructured
		orphan bool
		want   bool
	}{
		{"claim", pvcGVK.GroupKind(), empty, false, true},
		{"claim, orphaning", pvcGVK.GroupKind(), empty, true, true},
		{"volume reclaimed by Delete", pvGVK.GroupKind(), pv("Delete"), false, true},
		{"volume retained", pvGVK.GroupKind(), pv("Retain"), false, false},
		{"StatefulSet taking its pods", stsGVK.GroupKind(), empty, false, true},
		{"StatefulSet orphaning", stsGVK.GroupKind(), empty, true, false},
		{"CRD", schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, empty, false, true},
		{"Namespace", schema.GroupKind{Kind: "Namespace"}, empty, false, true},
		{"ConfigMap", cmGVK.GroupKind(), empty, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Guards(tt.kind, tt.obj, tt.orphan); got != tt.want {
				t.Errorf("Guards = %v, want %v", got, tt.want)
			}
		})
	}
}

func ackCluster(objs ...runtime.Object) (clusterfake.Resources, *dynamicfake.FakeDynamicClient) {
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), objs...)
	return clusterfake.Resources{Dynamic: dyn, Served: map[schema.GroupVersionKind]schema.GroupVersionResource{
		pvcGVK: {Version: "v1", Resource: "persistentvolumeclaims"},
		stsGVK: {Group: "apps", Version: "v1", Resource: "statefulsets"},
		cmGVK:  {Version: "v1", Resource: "configmaps"},
	}}, dyn
}

func live(gvk schema.GroupVersionKind, name, uid, rv string) *unstructured.Unstructured {
	u := object(gvk, name, nil)
	u.SetNamespace("prod")
	u.SetUID(types.UID(uid))
	u.SetResourceVersion(rv)
	return u
}

func ackOf(t *testing.T, dyn *dynamicfake.FakeDynamicClient, gvr schema.GroupVersionResource, name string) string {
	t.Helper()
	obj, err := dyn.Resource(gvr).Namespace("prod").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return obj.GetAnnotations()[AckAnnotation]
}

// TestAcknowledge: exactly the targets the guard refuses are annotated
// with their UID, the others (an orphaning StatefulSet delete, a
// ConfigMap, one gone) are not; Revoke removes them again.
func TestAcknowledge(t *testing.T) {
	r, dyn := ackCluster(live(pvcGVK, "files", "u-files", "5"), live(stsGVK, "db", "u-db", "6"), live(cmGVK, "settings", "u-cm", "7"))
	targets := []AckTarget{
		{GVK: pvcGVK, Namespace: "prod", Name: "files", ResourceVersion: "5"},
		{GVK: stsGVK, Namespace: "prod", Name: "db", ResourceVersion: "6"},
		{GVK: cmGVK, Namespace: "prod", Name: "settings", ResourceVersion: "7"},
		{GVK: pvcGVK, Namespace: "prod", Name: "gone", ResourceVersion: "8"},
	}
	acks, err := Acknowledge(context.Background(), r, targets, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(acks.Names(), ","); got != "PersistentVolumeClaim/prod/files" {
		t.Errorf("annotated %s, want the claim only", got)
	}
	pvcs, sts, cms := r.Served[pvcGVK], r.Served[stsGVK], r.Served[cmGVK]
	if got := ackOf(t, dyn, pvcs, "files"); got != "u-files" {
		t.Errorf("claim's acknowledgement %q, want its UID", got)
	}
	if got := ackOf(t, dyn, sts, "db") + ackOf(t, dyn, cms, "settings"); got != "" {
		t.Errorf("unguarded deletes annotated: %q", got)
	}
	if left := acks.Revoke(context.Background()); left != "" {
		t.Errorf("Revoke left %s", left)
	}
	if got := ackOf(t, dyn, pvcs, "files"); got != "" {
		t.Errorf("after Revoke the claim still carries %q", got)
	}
}

// TestAcknowledgeChanged: an object changed since the plan is refused, and
// what was annotated before it is removed.
func TestAcknowledgeChanged(t *testing.T) {
	r, dyn := ackCluster(live(pvcGVK, "a", "u-a", "5"), live(pvcGVK, "b", "u-b", "9"))
	_, err := Acknowledge(context.Background(), r, []AckTarget{
		{GVK: pvcGVK, Namespace: "prod", Name: "a", ResourceVersion: "5"},
		{GVK: pvcGVK, Namespace: "prod", Name: "b", ResourceVersion: "6"},
	}, false)
	if err == nil || !strings.Contains(err.Error(), "PersistentVolumeClaim/prod/b changed since the plan") {
		t.Fatalf("err %v, want b refused as changed", err)
	}
	for _, n := range []string{"a", "b"} {
		if got := ackOf(t, dyn, r.Served[pvcGVK], n); got != "" {
			t.Errorf("%s carries %q after the refusal", n, got)
		}
	}
}
