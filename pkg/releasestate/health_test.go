package releasestate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// fakeStates answers a StateReader with fixed errors.
type fakeStates struct{ journal, lease error }

func (f fakeStates) CheckJournal(context.Context, string, string) error { return f.journal }

func (f fakeStates) ObserveLease(_ context.Context, release, ns string, now time.Time) (*LeaseObservation, error) {
	if f.lease != nil {
		return nil, f.lease
	}
	return &LeaseObservation{Release: release, Namespace: ns, now: now}, nil
}

// TestTroubles: what status says is wrong with a release besides drift,
// each line sanitised.
func TestTroubles(t *testing.T) {
	rev := func(v int, s release.Status, desc string) *release.Release {
		return &release.Release{Name: "app", Namespace: "prod", Version: v, Info: &release.Info{Status: s, Description: desc}}
	}
	deployed := rev(2, release.StatusDeployed, "Upgrade complete")
	journal := &JournalError{Name: "app", Namespace: "prod", Journal: &JournalRecord{Release: "app", Namespace: "prod", Revision: 3}}
	tests := []struct {
		name          string
		current, last *release.Release
		states        fakeStates
		want          []string // a line each, by a part of it
	}{
		{"deployed, nothing held", deployed, deployed, fakeStates{}, nil},
		{"failed upgrade, compared with the last deployed", deployed, rev(3, release.StatusFailed, "timed out"), fakeStates{},
			[]string{"Helm status of revision 3 is failed: timed out (compared with revision 2, the last deployed one)"}},
		{"pending install", rev(1, release.StatusPendingInstall, ""), nil, fakeStates{}, []string{"Helm status of revision 1 is pending-install"}},
		{"interrupted apply", deployed, deployed, fakeStates{journal: journal}, []string{"an interrupted apply left its recreate journal: release \"app\""}},
		{"journal unreadable, Lease unreadable", deployed, deployed, fakeStates{journal: errors.New("forbidden"), lease: errors.New("timeout")},
			[]string{"the recreate journal could not be read: forbidden", "the release's Lease could not be read: timeout"}},
		{"hostile text escaped", deployed, rev(3, release.StatusFailed, "evil\x1b]0;title\x07 text"), fakeStates{},
			[]string{"is failed: evil"}},
	}
	masker := redact.NewMasker()
	san := redact.NewSanitizer(masker)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.last == nil {
				tt.last = tt.current
			}
			got := Troubles(context.Background(), tt.states, tt.current, tt.last, time.Now(), san)
			if len(got) != len(tt.want) {
				t.Fatalf("lines %q, want %d", got, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("line %d %q, want it to say %q", i, got[i], w)
				}
				if strings.ContainsAny(got[i], "\x1b\x07") {
					t.Errorf("line %d %q holds a control byte", i, got[i])
				}
			}
		})
	}
}
