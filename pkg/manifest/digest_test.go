package manifest

import (
	"reflect"
	"testing"
)

// TestSplitSharingHelm4Manifest: a document of a manifest Helm 4 stored
// (a blank line after each) shares the content of the render's document
// of the same text; a document whose block scalar keeps its final line
// breaks does not, and each keeps its own value.
func TestSplitSharingHelm4Manifest(t *testing.T) {
	cases := []struct {
		name, render, stored string
		shared               bool
	}{
		{"a blank line after the document", "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: \"1\"}\n",
			"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: \"1\"}\n\n", true},
		{"a literal block scalar", "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata:\n  a: |\n    x\n",
			"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata:\n  a: |\n    x\n\n", true},
		{"a block scalar keeping its breaks", "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata:\n  a: |+\n    x\n",
			"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata:\n  a: |+\n    x\n\n", false},
		{"a folded one with an indentation indicator", "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata:\n  a: >2+\n    x\n",
			"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata:\n  a: >2+\n    x\n\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			next, parsed, err := SplitRemembering("render", c.render, "demo", StaticScoper{})
			if err != nil {
				t.Fatal(err)
			}
			prev, err := SplitSharing("stored", c.stored, "demo", StaticScoper{}, parsed)
			if err != nil {
				t.Fatal(err)
			}
			id := ObjectID{Kind: "ConfigMap", Namespace: "demo", Name: "cm"}
			p, n := prev.Get(id), next.Get(id)
			if err := LoadPair(p, n); err != nil {
				t.Fatal(err)
			}
			shared := reflect.ValueOf(p.Obj.Object["data"]).UnsafePointer() == reflect.ValueOf(n.Obj.Object["data"]).UnsafePointer()
			if shared != c.shared {
				t.Errorf("shared %v, want %v", shared, c.shared)
			}
			want, err := Split("stored", c.stored, "demo", StaticScoper{})
			if err != nil {
				t.Fatal(err)
			}
			if got, w := p.Obj.Object["data"], want.Get(id).Obj.Object["data"]; !reflect.DeepEqual(got, w) {
				t.Errorf("the stored document's data %q, parsed alone %q", got, w)
			}
		})
	}
}
