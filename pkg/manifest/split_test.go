package manifest

import (
	"fmt"
	"reflect"
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
		// Documents are parsed concurrently; the first in the manifest is
		// the one named, whichever fails first.
		{"two bad documents", "# Source: a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n# Source: f.yaml\nkind: [\n---\n# Source: g.yaml\nkind: {\n", []string{"document 2 (f.yaml)"}},
		{"items not a list", "# Source: l.yaml\napiVersion: v1\nkind: List\nitems: {a: 1}\n", []string{"l.yaml", "items is not a list"}},
		{"item not an object", "# Source: l.yaml\napiVersion: v1\nkind: List\nitems: [null]\n", []string{"l.yaml", "List item 1", "not an object"}},
		{"nested list", "# Source: l.yaml\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items: []\n", []string{"List item 1", "not supported"}},
		{"item without name", "# Source: l.yaml\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {}\n", []string{"l.yaml (List item 1)", "metadata.name"}},
		{"duplicate across List and document", "# Source: a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\n# Source: l.yaml\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: x}\n",
			[]string{"ConfigMap/ns/x", "defined twice"}},
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

// TestSplitFlattensLists: a List (or any *List kind, or any document with
// items) stands for its items, as Helm's kube client builds it.
func TestSplitFlattensLists(t *testing.T) {
	tests := []struct {
		name, manifest string
		want           map[string]string // ID → source
	}{
		{"v1 List", `# Source: app/templates/list.yaml
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Secret
  metadata: {name: creds}
  stringData: {pw: x}
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web, namespace: other}
`, map[string]string{"Secret/prod/creds": "app/templates/list.yaml", "Deployment.apps/other/web": "app/templates/list.yaml"}},
		{"typed list, items without kind", `# Source: app/templates/cms.yaml
apiVersion: v1
kind: ConfigMapList
items:
- metadata: {name: a}
- metadata: {name: b}
`, map[string]string{"ConfigMap/prod/a": "app/templates/cms.yaml", "ConfigMap/prod/b": "app/templates/cms.yaml"}},
		{"empty and null lists", "apiVersion: v1\nkind: List\nitems: []\n---\napiVersion: v1\nkind: List\nitems:\n", map[string]string{}},
		{"CRD in a List scopes its kind", `apiVersion: v1
kind: List
items:
- apiVersion: apiextensions.k8s.io/v1
  kind: CustomResourceDefinition
  metadata: {name: clusterwidgets.example.com}
  spec: {group: example.com, scope: Cluster, names: {kind: ClusterWidget, plural: clusterwidgets}}
- apiVersion: example.com/v1
  kind: ClusterWidget
  metadata: {name: w, namespace: ignored}
`, map[string]string{"CustomResourceDefinition.apiextensions.k8s.io/clusterwidgets.example.com": "", "ClusterWidget.example.com/w": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := Split("test", tt.manifest, "prod", StaticScoper{})
			if err != nil {
				t.Fatal(err)
			}
			if set.Len() != len(tt.want) {
				t.Fatalf("got %d objects, want %d: %v", set.Len(), len(tt.want), set.Objects())
			}
			for _, o := range set.Objects() {
				if src, ok := tt.want[o.ID.String()]; !ok || src != o.Source {
					t.Errorf("unexpected object %s from %q", o.ID, o.Source)
				}
				if _, ok := o.Obj.Object["items"]; ok {
					t.Errorf("%s: the List itself was planned", o.ID)
				}
			}
		})
	}
}

// TestSplitSharing: a manifest split sharing another's parsed documents
// gives the objects Split gives and shares the content of the documents
// whose text is the same; what changes one object's metadata (Helm's
// ownership metadata, before or after the sharing split; the namespace,
// which a CRD only the first manifest holds scopes differently) leaves the
// other's as it was.
func TestSplitSharing(t *testing.T) {
	const cm = "---\n# Source: app/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: same\ndata: {a: \"1\"}\n"
	const changed = "---\n# Source: app/templates/cm2.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: changed\ndata: {a: \"%s\"}\n"
	const list = "---\n# Source: app/templates/list.yaml\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: s}, stringData: {k: v}}\n"
	const cluster = "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ns1}\nspec: {finalizers: [kubernetes]}\n"
	const crd = "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec: {group: example.com, scope: Cluster, names: {kind: Widget, plural: widgets}}\n"
	const widget = "---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: x}\n"
	first := cm + fmt.Sprintf(changed, "1") + list + cluster + crd + widget
	second := cm + fmt.Sprintf(changed, "2") + list + cluster + widget
	scoper := StaticScoper{}
	owned := func(manifest string) *Set {
		set, err := Split("owned", manifest, "demo", scoper)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range set.Objects() {
			SetHelmOwnership(o.Obj, "rel", "demo")
		}
		return set
	}
	id := func(kind, ns, name string) ObjectID { return ObjectID{Kind: kind, Namespace: ns, Name: name} }
	loadAll := func(t *testing.T, sets ...*Set) {
		t.Helper()
		for _, set := range sets {
			for _, o := range set.Objects() {
				if err := o.Load(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, ownedBefore := range []bool{true, false} {
		t.Run(fmt.Sprintf("ownership metadata set before the sharing split: %v", ownedBefore), func(t *testing.T) {
			next, parsed, err := SplitRemembering("next", first, "demo", scoper)
			if err != nil {
				t.Fatal(err)
			}
			if ownedBefore {
				loadAll(t, next)
				for _, o := range next.Objects() {
					SetHelmOwnership(o.Obj, "rel", "demo")
				}
			}
			prev, err := SplitSharing("prev", second, "demo", scoper, parsed)
			if err != nil {
				t.Fatal(err)
			}
			// As the planner loads them: each object's two forms together.
			for _, o := range prev.Objects() {
				if err := LoadPair(o, next.Get(o.ID)); err != nil {
					t.Fatal(err)
				}
			}
			loadAll(t, next)
			if !ownedBefore {
				for _, o := range next.Objects() {
					SetHelmOwnership(o.Obj, "rel", "demo")
				}
			}
			want, err := Split("prev", second, "demo", scoper)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(prev, want) {
				t.Errorf("SplitSharing gave\n%+v\nSplit gives\n%+v", prev.Objects(), want.Objects())
			}
			if w := prev.Get(ObjectID{Group: "example.com", Kind: "Widget", Namespace: "x", Name: "w"}); w == nil {
				t.Errorf("the Widget is not in namespace x, as its document says: %v", prev.Objects())
			}
			// And the other way round: the last release's objects get the
			// ownership metadata (offline), the new render's stay.
			for _, o := range prev.Objects() {
				SetHelmOwnership(o.Obj, "other", "demo")
			}
			if wantNext := owned(first); !reflect.DeepEqual(next.Objects(), wantNext.Objects()) {
				t.Errorf("the new render's objects changed with the last release's:\n%+v\nwant\n%+v", next.Objects(), wantNext.Objects())
			}
			if ownedBefore {
				return // loaded apart: nothing shared
			}
			same, sameNext := prev.Get(id("ConfigMap", "demo", "same")).Obj.Object, next.Get(id("ConfigMap", "demo", "same")).Obj.Object
			if reflect.ValueOf(same["data"]).UnsafePointer() != reflect.ValueOf(sameNext["data"]).UnsafePointer() {
				t.Error("the content of a document of the same text is not shared")
			}
			ns := prev.Get(id("Namespace", "", "ns1")).Obj.Object
			if reflect.ValueOf(ns["spec"]).UnsafePointer() != reflect.ValueOf(next.Get(id("Namespace", "", "ns1")).Obj.Object["spec"]).UnsafePointer() {
				t.Error("the content of a cluster-scoped document of the same text is not shared")
			}
		})
	}
}
