package live

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
)

// TestPodSecurityWarns reads a namespace's labels once per run, only for a
// pod controller, and asks the server when the namespace cannot be read.
func TestPodSecurityWarns(t *testing.T) {
	namespace := func(labels map[string]interface{}) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]interface{}{"name": "ns", "labels": labels}}}
	}
	deploy := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]interface{}{"name": "web", "namespace": "ns"},
		"spec": map[string]interface{}{"template": map[string]interface{}{"spec": map[string]interface{}{
			"containers": []interface{}{map[string]interface{}{"name": "app", "image": "nginx"}}}}}}}
	cm := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": "c", "namespace": "ns"}}}
	tests := []struct {
		name   string
		obj    *unstructured.Unstructured
		labels map[string]interface{}
		forbid bool
		gets   int
		// asked: a part of why; "": derived.
		asked string
	}{
		{name: "warn restricted", obj: deploy, labels: map[string]interface{}{"pod-security.kubernetes.io/warn": "restricted"}, gets: 1, asked: "restricted"},
		{name: "warn privileged", obj: deploy, labels: map[string]interface{}{"pod-security.kubernetes.io/warn": "privileged"}, gets: 1},
		{name: "unlabelled", obj: deploy, gets: 1},
		{name: "namespace unreadable", obj: deploy, forbid: true, gets: 1, asked: "unreadable"},
		{name: "not a pod controller: no read", obj: cm, labels: map[string]interface{}{"pod-security.kubernetes.io/warn": "restricted"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dyn := fakeDynamic(namespace(tc.labels))
			if tc.forbid {
				dyn.PrependReactor("get", "namespaces", func(a clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "ns", errors.New("no"))
				})
			}
			o := NewObservers(&Cluster{Dynamic: dyn})
			for range 2 {
				got := o.PodSecurityWarns(context.Background(), tc.obj, "v1.37.2")
				if (got == "") != (tc.asked == "") || !strings.Contains(got, tc.asked) {
					t.Errorf("got %q, want asked %q", got, tc.asked)
				}
			}
			if n := len(dyn.Actions()); n != tc.gets {
				t.Errorf("%d requests for two updates, want %d (one GET per namespace)", n, tc.gets)
			}
		})
	}
}
