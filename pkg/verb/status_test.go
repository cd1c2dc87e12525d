package verb

import (
	"errors"
	"testing"

	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

func revision(v int, s release.Status) *release.Release {
	return &release.Release{Name: "app", Namespace: "prod", Version: v, Info: &release.Info{Status: s}}
}

// TestStatusTargetOf: the revision status compares the live objects with
// is the one the next upgrade starts from.
func TestStatusTargetOf(t *testing.T) {
	tests := []struct {
		name          string
		hist          []*release.Release // newest first
		current, last int                // 0: no target
		notFound      bool
	}{
		{"deployed", []*release.Release{revision(2, release.StatusDeployed), revision(1, release.StatusSuperseded)}, 2, 2, false},
		{"failed upgrade: the last deployed", []*release.Release{revision(3, release.StatusFailed), revision(2, release.StatusDeployed)}, 2, 3, false},
		{"failed install: itself", []*release.Release{revision(1, release.StatusFailed)}, 1, 1, false},
		{"pending: the revision being applied", []*release.Release{revision(3, release.StatusPendingUpgrade), revision(2, release.StatusDeployed)}, 3, 3, false},
		{"uninstalled, history kept", []*release.Release{revision(2, release.StatusUninstalled)}, 0, 0, false},
		{"no history", nil, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := statusTargetOf("app", "prod", tt.hist)
			if tt.notFound {
				if !errors.Is(err, render.ErrReleaseNotFound) {
					t.Fatalf("err %v, want release not found", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.current == 0 {
				if got != nil {
					t.Fatalf("target revision %d, want none", got.current.Version)
				}
				return
			}
			if got == nil || got.current.Version != tt.current || got.last.Version != tt.last {
				t.Fatalf("target %+v, want current %d, last %d", got, tt.current, tt.last)
			}
		})
	}
}
