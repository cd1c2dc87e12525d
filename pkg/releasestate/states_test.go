package releasestate

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
)

// TestStatesAsPerRelease: the journals and Leases read with one LIST each
// say of every release what CheckJournal and ObserveLease say with a GET
// each (a journal, a held Lease, none, in another namespace), and a kind
// that may not be listed is read with the GETs.
func TestStatesAsPerRelease(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	releases := [][2]string{{relName, relNS}, {"other", relNS}, {relName, "elsewhere"}, {"none", relNS}}
	for _, forbidden := range []string{"", "secrets", "leases"} {
		t.Run("forbidden "+forbidden, func(t *testing.T) {
			fc := newFakeCluster(t)
			allowLeases(fc)
			journal, err := (&JournalRecord{Release: relName, Namespace: relNS, Revision: 4, Step: StepUpgrading}).Secret()
			if err != nil {
				t.Fatal(err)
			}
			if err := fc.client.Tracker().Create(live.SecretsGVR, journal, relNS); err != nil {
				t.Fatal(err)
			}
			held, err := ObserveLease(ctx, fc.Cluster, "other", relNS, true, now)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := TakeLease(ctx, fc.Cluster, held, leaseRequest("run-a", now)); err != nil {
				t.Fatal(err)
			}
			if forbidden != "" {
				fc.client.PrependReactor("list", forbidden, func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(live.SecretsGVR.GroupResource(), "", fmt.Errorf("no"))
				})
			}
			fc.client.ClearActions()
			states := ReadStates(ctx, fc.Cluster, "")
			for _, r := range releases {
				got, want := fmt.Sprint(states.CheckJournal(ctx, r[0], r[1])), fmt.Sprint(CheckJournal(ctx, fc.Cluster, r[0], r[1]))
				if got != want {
					t.Errorf("%s journal: from the LIST %s, with a GET %s", r, got, want)
				}
				a, errA := states.ObserveLease(ctx, r[0], r[1], now.Add(time.Second))
				b, errB := ObserveLease(ctx, fc.Cluster, r[0], r[1], false, now.Add(time.Second))
				if fmt.Sprint(errA) != fmt.Sprint(errB) || a.Note() != b.Note() {
					t.Errorf("%s lease: from the LIST %v %q, with a GET %v %q", r, errA, a.Note(), errB, b.Note())
				}
			}
			if a, _ := states.ObserveLease(ctx, "other", relNS, now.Add(time.Second)); a.Note() == "" {
				t.Errorf("the held Lease is not noted")
			}
			if err := states.CheckJournal(ctx, relName, relNS); err == nil {
				t.Errorf("the journal is not found")
			}
			lists := 0
			for _, a := range fc.client.Actions() {
				if a.GetVerb() == "list" {
					lists++
				}
			}
			if lists != 2 {
				t.Errorf("%d LISTs, want one of Secrets and one of Leases", lists)
			}
		})
	}
}
