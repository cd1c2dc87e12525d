package classify

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
)

func benchObjects(n int) ([]*unstructured.Unstructured, []*unstructured.Unstructured) {
	var live, next []*unstructured.Unstructured
	for i := 0; i < n; i++ {
		mk := func(image string) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]interface{}{
				"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]interface{}{"name": fmt.Sprintf("d%d", i), "labels": map[string]interface{}{"app": "x"}},
				"spec": map[string]interface{}{"replicas": int64(2), "template": map[string]interface{}{
					"spec": map[string]interface{}{"containers": []interface{}{map[string]interface{}{"name": "c", "image": image}}}}},
			}}
		}
		live, next = append(live, mk("nginx:1")), append(next, mk("nginx:2"))
	}
	return live, next
}

func BenchmarkChangedPaths1000(b *testing.B) {
	live, next := benchObjects(1000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range live {
			ChangedPaths(live[j].Object, next[j].Object)
		}
	}
}

func BenchmarkClassify1000(b *testing.B) {
	live, next := benchObjects(1000)
	c := New()
	gk := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range live {
			c.Classify(Update{GroupKind: gk, Live: live[j], Predicted: next[j], Local: next[j], Target: next[j]})
		}
	}
}

// BenchmarkUnknownFields1000: what the planner's strict decoding of every
// built-in object of a render costs per 1000 Deployments (issue 26).
func BenchmarkUnknownFields1000(b *testing.B) {
	_, next := benchObjects(1000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, o := range next {
			if predict.UnknownFields(o) != nil {
				b.Fatal("a clean Deployment has unknown fields")
			}
		}
	}
}
