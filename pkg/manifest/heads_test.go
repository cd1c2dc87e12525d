package manifest

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestHeads: the quick scan finds the objects Split finds in plain
// manifests, and skips what it cannot read plainly.
func TestHeads(t *testing.T) {
	scoper := ScoperFunc(func(gvk schema.GroupVersionKind) (bool, bool, error) {
		switch gvk.Kind {
		case "Namespace":
			return false, true, nil
		case "Unknown":
			return false, false, nil
		}
		return true, true, nil
	})
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	deploy := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	tests := []struct {
		name, manifest string
		want           []Head
	}{
		{name: "helm's rendering", manifest: "---\n# Source: c/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels:\n    name: not-this\ndata:\n  name: nor-this\n" +
			"---\n# Source: c/templates/d.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n    namespace: \"other\"\n    name: 'd' # comment\nspec: {}\n",
			want: []Head{{GVK: cm, Namespace: "rel", Name: "cm"}, {GVK: deploy, Namespace: "other", Name: "d"}}},
		{name: "cluster-scoped", manifest: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: n\n  namespace: ignored\n",
			want: []Head{{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Name: "n"}}},
		{name: "skipped: unknown kind, flow style, block scalar, list, no name", manifest: "apiVersion: x/v1\nkind: Unknown\nmetadata:\n  name: u\n" +
			"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: flow}\n" +
			"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: |\n    block\n" +
			"---\napiVersion: v1\nkind: List\nmetadata:\n  name: l\nitems: []\n" +
			"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Heads(tt.manifest, "rel", scoper); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Heads:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
