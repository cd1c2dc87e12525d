package live

import (
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

// TestReleaseClaims: which live objects are strays of a release.
func TestReleaseClaims(t *testing.T) {
	set := manifest.NewSet()
	in := manifest.ObjectID{Kind: "Service", Namespace: "prod", Name: "api"}
	if err := set.Add(&manifest.Object{ID: in}); err != nil {
		t.Fatal(err)
	}
	hook := manifest.ObjectID{Group: "batch", Kind: "Job", Namespace: "prod", Name: "migrate"}
	rel := &Release{Name: "app", Namespace: "prod", Revision: 1, Objects: set, Hooks: map[manifest.ObjectID]bool{hook: true}}
	svc := func(ns, name string) manifest.ObjectID {
		return manifest.ObjectID{Kind: "Service", Namespace: ns, Name: name}
	}
	owned := map[string]string{manifest.ReleaseNameAnnotation: "app", manifest.ReleaseNamespaceAnnotation: "prod"}
	labelled := map[string]string{"app.kubernetes.io/instance": "app", "app.kubernetes.io/managed-by": "Helm"}
	tests := []struct {
		name string
		meta ItemMeta
		want bool
	}{
		{"annotated stray", ItemMeta{ID: svc("prod", "stray"), Annotations: owned}, true},
		{"annotated, another namespace's release", ItemMeta{ID: svc("prod", "stray"),
			Annotations: map[string]string{manifest.ReleaseNameAnnotation: "app", manifest.ReleaseNamespaceAnnotation: "dev"}}, false},
		{"annotated for another release", ItemMeta{ID: svc("prod", "stray"), Annotations: map[string]string{manifest.ReleaseNameAnnotation: "other"}}, false},
		{"annotated without a namespace, in the release namespace", ItemMeta{ID: svc("prod", "stray"),
			Annotations: map[string]string{manifest.ReleaseNameAnnotation: "app"}}, true},
		{"labelled stray", ItemMeta{ID: svc("prod", "stray"), Labels: labelled}, true},
		{"labelled, other namespace", ItemMeta{ID: svc("dev", "stray"), Labels: labelled}, false},
		{"instance label alone", ItemMeta{ID: svc("prod", "stray"), Labels: map[string]string{"app.kubernetes.io/instance": "app"}}, false},
		{"the release's own object", ItemMeta{ID: in, Annotations: owned}, false},
		{"a hook", ItemMeta{ID: hook, Annotations: owned}, false},
		{"owned by a controller", ItemMeta{ID: svc("prod", "stray"), Annotations: owned, Controlled: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rel.Claims(tt.meta); got != tt.want {
				t.Errorf("Claims = %v, want %v", got, tt.want)
			}
		})
	}
}
