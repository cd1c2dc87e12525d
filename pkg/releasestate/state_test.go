package releasestate

import (
	"context"
	"errors"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	clienttesting "k8s.io/client-go/testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
)

// TestRead: a plan's one read of the stored state refuses while a journal
// is there, before reading anything else; otherwise it holds the Lease as
// read and the history with the revision an upgrade starts from, and sends
// no write.
func TestRead(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cfg := &action.Configuration{Releases: storage.Init(driver.NewMemory())}
	store := cfg.Releases
	for v, status := range []release.Status{release.StatusSuperseded, release.StatusDeployed, release.StatusFailed} {
		if err := store.Create(&release.Release{Name: relName, Namespace: relNS, Version: v + 1, Info: &release.Info{Status: status}}); err != nil {
			t.Fatal(err)
		}
	}

	fc := newFakeCluster(t)
	s, err := Read(ctx, fc.Cluster, cfg, relName, relNS, true, now)
	if err != nil {
		t.Fatal(err)
	}
	if s.Lease == nil || s.Lease.Live() != nil || s.HistoryErr != nil || len(s.History) != 3 || s.History[0].Version != 3 || s.From == nil || s.From.Version != 2 {
		t.Errorf("state %+v, want a free lease, revisions 3..1 and an upgrade from revision 2", s)
	}
	if r := s.Recorded; r == nil || r.Version != 3 || !r.OK || r.Err != nil || r.Method != "" {
		t.Errorf("recorded apply method %+v, want revision 3's, known (the memory driver holds no Helm 4 record)", r)
	}
	for _, a := range fc.client.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("Read sent a %s of %s", a.GetVerb(), a.GetResource().Resource)
		}
	}

	fc = newFakeCluster(t)
	rec := &JournalRecord{Release: relName, Namespace: relNS, Revision: 4, Step: StepUpgrading}
	secret, err := rec.Secret()
	if err != nil {
		t.Fatal(err)
	}
	if err := fc.client.Tracker().Create(live.SecretsGVR, secret, relNS); err != nil {
		t.Fatal(err)
	}
	_, err = Read(ctx, fc.Cluster, cfg, relName, relNS, false, now)
	var je *JournalError
	if !errors.As(err, &je) || je.Journal.Revision != 4 {
		t.Fatalf("Read with a journal: %v, want a *JournalError", err)
	}
	for _, a := range fc.client.Actions() {
		if g, ok := a.(clienttesting.GetAction); ok && g.GetResource() == live.LeasesGVR {
			t.Errorf("Read read the Lease after finding a journal")
		}
	}
}
