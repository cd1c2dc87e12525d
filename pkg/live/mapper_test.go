package live

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper counts the RESTMapping questions that reach it.
type countingMapper struct {
	meta.RESTMapper
	asked int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.asked++
	return c.RESTMapper.RESTMapping(gk, versions...)
}

// TestMemoized: the memoized mapper answers as the mapper it wraps, errors
// included, asking it once per kind and versions.
func TestMemoized(t *testing.T) {
	deployment := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	configMap := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	base := meta.NewDefaultRESTMapper(nil)
	base.Add(deployment, meta.RESTScopeNamespace)
	base.Add(configMap, meta.RESTScopeNamespace)
	inner := &countingMapper{RESTMapper: base}
	m := Memoized(inner)
	questions := []struct {
		gk       schema.GroupKind
		versions []string
	}{
		{deployment.GroupKind(), []string{"v1"}},
		{deployment.GroupKind(), nil},
		{configMap.GroupKind(), []string{"v1"}},
		{deployment.GroupKind(), []string{"v1beta1"}}, // not served: an error
		{schema.GroupKind{Group: "example.com", Kind: "Widget"}, []string{"v1"}},
	}
	for range 3 {
		for _, q := range questions {
			want, wantErr := base.RESTMapping(q.gk, q.versions...)
			got, err := m.RESTMapping(q.gk, q.versions...)
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(err, wantErr) || meta.IsNoMatchError(err) != meta.IsNoMatchError(wantErr) {
				t.Fatalf("%v %v: got %v, %v; want %v, %v", q.gk, q.versions, got, err, want, wantErr)
			}
			if got != nil {
				got.Resource.Resource = "changed by a caller"
			}
		}
	}
	if inner.asked != len(questions) {
		t.Errorf("the wrapped mapper was asked %d times, want %d", inner.asked, len(questions))
	}
}
