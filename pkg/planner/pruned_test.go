package planner

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
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

// TestNotePruned: the warning on a custom resource names the dropped
// fields, the version, the CRD installed in the cluster with the version
// its operator stamped on it, and the chart's crds/ CRD to apply; a
// built-in kind's pruned fields are unknownFields' to explain.
func TestNotePruned(t *testing.T) {
	liveCRD := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.x.example.com
  annotations: {operator.example.com/version: "0.68.0", description: old}
spec: {group: x.example.com, names: {kind: Gadget, plural: gadgets}}
`), &liveCRD.Object); err != nil {
		t.Fatal(err)
	}
	crds, err := splitCRDs([]CRDFile{{Name: "app/crds/gadgets.yaml", Data: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets.x.example.com}\nspec: {group: x.example.com, names: {kind: Gadget, plural: gadgets}}\n"}}, Offline{})
	if err != nil {
		t.Fatal(err)
	}
	changes := []plan.Change{
		{ID: manifest.ObjectID{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "gadgets.x.example.com"}, Before: liveCRD},
		{ID: manifest.ObjectID{Group: "x.example.com", Kind: "Gadget", Namespace: "ns", Name: "g"}, APIVersion: "x.example.com/v1", Pruned: []string{"spec.color"}},
		{ID: manifest.ObjectID{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web"}, APIVersion: "apps/v1", Pruned: []string{"spec.replica"}},
	}
	notePruned(changes, crds)
	want := "warning: the server drops fields the chart sets: spec.color: the CustomResourceDefinition installed in the cluster (gadgets.x.example.com: operator.example.com/version 0.68.0) does not define them in version x.example.com/v1 (its schema prunes unknown fields), so the upgrade stores the object without them; the chart's crds/ CRD gadgets.x.example.com may define them, but Helm never upgrades crds/: apply it first (the manual change of CustomResourceDefinition/gadgets.x.example.com)"
	if got := changes[1].Notes; len(got) != 1 || got[0] != want {
		t.Errorf("Gadget notes %q\nwant %q", got, want)
	}
	if got := changes[2].Notes; len(got) != 0 {
		t.Errorf("Deployment notes %q, want none (unknownFields explains a built-in kind's)", got)
	}
}
