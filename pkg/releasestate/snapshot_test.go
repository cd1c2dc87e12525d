package releasestate

import (
	"errors"
	"fmt"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// TestRecordedServerSide: a record that cannot be read (no storage, no
// release) or holds no apply method (the memory driver's) is client-side.
func TestRecordedServerSide(t *testing.T) {
	memory := &action.Configuration{Releases: storage.Init(driver.NewMemory())}
	rel := &release.Release{Name: "r", Namespace: "ns", Version: 1}
	for _, tc := range []struct {
		name string
		cfg  *action.Configuration
		rel  *release.Release
	}{
		{"without storage", nil, rel},
		{"without a release", memory, nil},
		{"memory driver", memory, rel},
	} {
		if RecordedServerSide(t.Context(), tc.cfg, tc.rel) {
			t.Errorf("%s: server-side, want client-side", tc.name)
		}
	}
}

// TestRecordedServerSideFromSnapshot: a snapshot that holds the apply
// method read with the history answers for that revision without reading
// the record again (the memory driver's would say client-side); another
// revision is read from the storage.
func TestRecordedServerSideFromSnapshot(t *testing.T) {
	memory := &action.Configuration{Releases: storage.Init(driver.NewMemory())}
	v1 := &release.Release{Name: "r", Namespace: "ns", Version: 1}
	snap := Snapshot(memory, []*release.Release{v1}, &Recorded{Version: 1, Method: plan.ApplyMethodSSA, OK: true})
	if !RecordedServerSide(t.Context(), snap, v1) {
		t.Error("revision 1: client-side, want the server-side method the snapshot holds")
	}
	if RecordedServerSide(t.Context(), snap, &release.Release{Name: "r", Namespace: "ns", Version: 2}) {
		t.Error("revision 2: server-side, want the storage's answer (client-side)")
	}
}

// TestSnapshotRefusesWrites: Helm's action never writes while planning;
// if it did, the snapshot refuses, and the values it hands out are
// copies.
func TestSnapshotRefusesWrites(t *testing.T) {
	rel := &release.Release{Name: "r", Namespace: "ns", Version: 1, Info: &release.Info{Status: release.StatusDeployed},
		Config: map[string]interface{}{"a": map[string]interface{}{"b": 1}}}
	snap := Snapshot(&action.Configuration{Releases: storage.Init(driver.NewMemory())}, []*release.Release{rel}, nil)
	if err := snap.Releases.Create(rel); !errors.Is(err, errWriteRefused) {
		t.Errorf("Create err = %v", err)
	}
	if err := snap.Releases.Update(rel); !errors.Is(err, errWriteRefused) {
		t.Errorf("Update err = %v", err)
	}
	if _, err := snap.Releases.Delete("r", 1); !errors.Is(err, errWriteRefused) {
		t.Errorf("Delete err = %v", err)
	}
	got, err := snap.Releases.Get("r", 1)
	if err != nil {
		t.Fatal(err)
	}
	got.Config["a"].(map[string]interface{})["b"] = 2
	if rel.Config["a"].(map[string]interface{})["b"] != 1 {
		t.Error("a change of the snapshot's values reached the release read")
	}
}

func ExampleReleaseNotFoundError() {
	err := fmt.Errorf("plan: %w", &ReleaseNotFoundError{Name: "web", Namespace: "prod"})
	fmt.Println(errors.Is(err, ErrReleaseNotFound), err)
	// Output: true plan: release "web" not found in namespace prod; use --install to install it
}
