package render

import (
	"context"
	"errors"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/helmtest"
)

// TestRollback: the revision helm rollback goes back to, and the next
// revision made of it, as Helm 3.22's prepareRollback makes them; every
// revision the history lacks is an error naming the ones it holds.
func TestRollback(t *testing.T) {
	// statuses of revisions 1..n, oldest first.
	tests := []struct {
		name     string
		statuses []release.Status
		revision int
		want     int    // the revision rolled back to
		err      string // or the error
	}{
		{"previous of a deployed last", []release.Status{release.StatusSuperseded, release.StatusDeployed}, 0, 1, ""},
		{"previous of a failed upgrade is the one it failed from", []release.Status{release.StatusSuperseded, release.StatusDeployed, release.StatusFailed}, 0, 2, ""},
		{"a named revision", []release.Status{release.StatusSuperseded, release.StatusSuperseded, release.StatusDeployed}, 1, 1, ""},
		{"the current revision itself", []release.Status{release.StatusSuperseded, release.StatusDeployed}, 2, 2, ""},
		{"nothing before revision 1", []release.Status{release.StatusDeployed}, 0, 0, "revision 1 has no previous revision to roll back to (the history holds revisions 1)"},
		{"a revision not kept", []release.Status{release.StatusSuperseded, release.StatusDeployed}, 5, 0, "no revision 5 to roll back to (the history holds revisions 1, 2)"},
		{"a negative revision", []release.Status{release.StatusDeployed}, -1, 0, "revision -1: a revision is 1 or more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := helmtest.Config(t, helmtest.NewCountingDriver("ns"), nil)
			for i, st := range tt.statuses {
				v := i + 1
				rel := &release.Release{Name: "db", Namespace: "ns", Version: v, Manifest: "manifest of " + string(rune('0'+v)),
					Config: map[string]interface{}{"v": v}, Labels: map[string]string{"rev": string(rune('0' + v))},
					Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "db", Version: "1.0." + string(rune('0'+v))}},
					Hooks: []*release.Hook{{Name: "hook", Kind: "Job", Manifest: "hook of " + string(rune('0'+v))}},
					Info:  &release.Info{Status: st, Notes: "notes of " + string(rune('0'+v))}}
				if err := cfg.Releases.Create(rel); err != nil {
					t.Fatal(err)
				}
			}
			res, err := Rollback(context.Background(), cfg, "db", "ns", tt.revision)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			n := len(tt.statuses)
			target, _ := cfg.Releases.Get("db", tt.want)
			next := res.Next
			switch {
			case res.RollbackTo != tt.want || res.Previous.Version != n || res.Last.Version != n:
				t.Errorf("rolled back to %d from %d (last %d), want %d from %d", res.RollbackTo, res.Previous.Version, res.Last.Version, tt.want, n)
			case next.Version != n+1 || next.Info.Status != release.StatusPendingRollback || next.Info.Description != "Rollback to "+string(rune('0'+tt.want)):
				t.Errorf("next revision %d, %s, %q", next.Version, next.Info.Status, next.Info.Description)
			case next.Manifest != target.Manifest || next.Hooks[0].Manifest != target.Hooks[0].Manifest || next.Info.Notes != target.Info.Notes ||
				next.Chart.Metadata.Version != target.Chart.Metadata.Version || next.Config["v"] != tt.want || next.Labels["rev"] != target.Labels["rev"]:
				t.Errorf("next revision is not revision %d: manifest %q, chart %s", tt.want, next.Manifest, next.Chart.Metadata.Version)
			case res.Install || res.Chart != target.Chart:
				t.Errorf("install %v, chart %v", res.Install, res.Chart.Metadata)
			case !res.helm3Only || res.ServerSideApply(ServerSideAuto):
				// The memory driver holds Helm 3's records only.
				t.Errorf("helm 3 release %v, server-side %v", res.helm3Only, res.ServerSideApply(ServerSideAuto))
			}
		})
	}
	t.Run("no release", func(t *testing.T) {
		cfg := helmtest.Config(t, helmtest.NewCountingDriver("ns"), nil)
		if _, err := Rollback(context.Background(), cfg, "db", "ns", 0); err == nil || !errors.Is(err, ErrReleaseNotFound) || !strings.Contains(err.Error(), `release "db" not found in namespace ns: no revision to roll back to`) {
			t.Errorf("err %v", err)
		}
	})
}
