package planner

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// TestMarkPruned: the fields a custom resource's render sets that the
// server's answer lacks are listed; metadata and built-in kinds are not.
func TestMarkPruned(t *testing.T) {
	obj := func(doc string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &o.Object); err != nil {
			t.Fatal(err)
		}
		return o
	}
	const gadget = "apiVersion: x.example.com/v1\nkind: Gadget\nmetadata: {name: g, labels: {a: b}}\n"
	tests := []struct {
		name, target, stored string
		want                 []string
	}{
		{name: "field dropped", target: gadget + "spec: {size: 1, color: red, deep: {x: 1}}\n",
			stored: "apiVersion: x.example.com/v1\nkind: Gadget\nmetadata: {name: g, uid: u}\nspec: {size: 1}\n",
			want:   []string{"spec.color", "spec.deep"}},
		{name: "all kept, server fields added", target: gadget + "spec: {size: 1}\n",
			stored: gadget + "spec: {size: 1, defaulted: true}\nstatus: {ok: true}\n"},
		{name: "value changed by the server is not pruned", target: gadget + "spec: {size: 1}\n", stored: gadget + "spec: {size: 2}\n"},
		{name: "built-in kind", target: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\nbogus: 1\n",
			stored: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c plan.Change
			markPruned(&c, obj(tt.target), obj(tt.stored))
			if !slices.Equal(c.Pruned, tt.want) {
				t.Errorf("pruned %v, want %v", c.Pruned, tt.want)
			}
		})
	}
}
