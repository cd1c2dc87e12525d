package classify

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestDestructiveKinds: what the table says of each kind, matched by group
// and kind (a custom kind that shares a core kind's name is not it).
func TestDestructiveKinds(t *testing.T) {
	tests := []struct {
		gk                            schema.GroupKind
		destructive, never, migration bool
	}{
		{schema.GroupKind{Kind: "PersistentVolumeClaim"}, true, true, true},
		{schema.GroupKind{Kind: "PersistentVolume"}, true, true, true},
		{schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, true, true, false},
		{schema.GroupKind{Kind: "Namespace"}, true, true, false},
		{schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, true, false, false},
		{schema.GroupKind{Group: "apps", Kind: "Deployment"}, false, false, false},
		{schema.GroupKind{Kind: "Secret"}, false, false, false},
		{schema.GroupKind{Group: "example.com", Kind: "PersistentVolumeClaim"}, false, false, false},
		{schema.GroupKind{Kind: "StatefulSet"}, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.gk.String(), func(t *testing.T) {
			d, ok := DestructiveKind(tt.gk)
			if ok != tt.destructive || (d.Deleted != "") != tt.destructive || (d.NeverRecreated != "") != tt.never || (d.Migrate != "") != tt.migration {
				t.Errorf("%+v, %v; want destructive %v, never recreated %v, a migration %v", d, ok, tt.destructive, tt.never, tt.migration)
			}
		})
	}
}
