package verb

import (
	"testing"

	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

func revision(v int, s release.Status) *release.Release {
	return &release.Release{Name: "app", Namespace: "prod", Version: v, Info: &release.Info{Status: s}}
}

// TestStatusClaims: which live objects are strays of a release.
func TestStatusClaims(t *testing.T) {
	set := manifest.NewSet()
	in := manifest.ObjectID{Kind: "Service", Namespace: "prod", Name: "api"}
	if err := set.Add(&manifest.Object{ID: in}); err != nil {
		t.Fatal(err)
	}
	hook := manifest.ObjectID{Group: "batch", Kind: "Job", Namespace: "prod", Name: "migrate"}
	target := &statusTarget{current: revision(1, release.StatusDeployed), objects: set, hooks: map[manifest.ObjectID]bool{hook: true}}
	svc := func(ns, name string) manifest.ObjectID {
		return manifest.ObjectID{Kind: "Service", Namespace: ns, Name: name}
	}
	owned := map[string]string{manifest.ReleaseNameAnnotation: "app", manifest.ReleaseNamespaceAnnotation: "prod"}
	labelled := map[string]string{"app.kubernetes.io/instance": "app", "app.kubernetes.io/managed-by": "Helm"}
	tests := []struct {
		name string
		meta live.ItemMeta
		want bool
	}{
		{"annotated stray", live.ItemMeta{ID: svc("prod", "stray"), Annotations: owned}, true},
		{"annotated, another namespace's release", live.ItemMeta{ID: svc("prod", "stray"),
			Annotations: map[string]string{manifest.ReleaseNameAnnotation: "app", manifest.ReleaseNamespaceAnnotation: "dev"}}, false},
		{"annotated for another release", live.ItemMeta{ID: svc("prod", "stray"), Annotations: map[string]string{manifest.ReleaseNameAnnotation: "other"}}, false},
		{"annotated without a namespace, in the release namespace", live.ItemMeta{ID: svc("prod", "stray"),
			Annotations: map[string]string{manifest.ReleaseNameAnnotation: "app"}}, true},
		{"labelled stray", live.ItemMeta{ID: svc("prod", "stray"), Labels: labelled}, true},
		{"labelled, other namespace", live.ItemMeta{ID: svc("dev", "stray"), Labels: labelled}, false},
		{"instance label alone", live.ItemMeta{ID: svc("prod", "stray"), Labels: map[string]string{"app.kubernetes.io/instance": "app"}}, false},
		{"the release's own object", live.ItemMeta{ID: in, Annotations: owned}, false},
		{"a hook", live.ItemMeta{ID: hook, Annotations: owned}, false},
		{"owned by a controller", live.ItemMeta{ID: svc("prod", "stray"), Annotations: owned, Controlled: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := target.claims(tt.meta); got != tt.want {
				t.Errorf("claims = %v, want %v", got, tt.want)
			}
		})
	}
}
