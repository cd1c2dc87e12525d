package manifest

import (
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	manifest := `---
# Source: app/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
---
# Source: app/templates/role.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader, namespace: ignored}
---
# Source: app/templates/crd.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: clusterwidgets.example.com}
spec: {group: example.com, scope: Cluster, names: {kind: ClusterWidget, plural: clusterwidgets}}
---
# Source: app/templates/cw.yaml
apiVersion: example.com/v1
kind: ClusterWidget
metadata: {name: w}
---
# Source: app/templates/other.yaml
apiVersion: example.org/v1
kind: Gadget
metadata: {name: g, namespace: elsewhere}
---
# Source: app/templates/empty.yaml
`
	set, err := Split("test", manifest, "prod", StaticScoper{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"ConfigMap/prod/settings":                                                  "app/templates/cm.yaml",
		"ClusterRole.rbac.authorization.k8s.io/reader":                             "app/templates/role.yaml",
		"CustomResourceDefinition.apiextensions.k8s.io/clusterwidgets.example.com": "app/templates/crd.yaml",
		"ClusterWidget.example.com/w":                                              "app/templates/cw.yaml",
		"Gadget.example.org/elsewhere/g":                                           "app/templates/other.yaml",
	}
	if set.Len() != len(want) {
		t.Fatalf("got %d objects, want %d", set.Len(), len(want))
	}
	for _, o := range set.Objects() {
		if src, ok := want[o.ID.String()]; !ok || src != o.Source {
			t.Errorf("unexpected object %s from %s", o.ID, o.Source)
		}
		if o.Obj.GetNamespace() != o.ID.Namespace {
			t.Errorf("%s: object namespace %q differs from its ID", o.ID, o.Obj.GetNamespace())
		}
	}
}

func TestSplitErrorsNameTheCulprit(t *testing.T) {
	tests := []struct {
		name, manifest string
		want           []string
	}{
		{"duplicate", "# Source: a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n# Source: b.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
			[]string{"ConfigMap/ns/x", "a.yaml", "b.yaml"}},
		{"no name", "# Source: c.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", []string{"c.yaml", "metadata.name"}},
		{"no kind", "# Source: d.yaml\napiVersion: v1\nmetadata: {name: x}\n", []string{"d.yaml", "kind"}},
		{"bad yaml", "# Source: e.yaml\napiVersion: v1\nkind: [\n", []string{"e.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Split("render", tt.manifest, "ns", StaticScoper{})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}
