package render

import (
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
)

// TestServerSideApply checks Helm 4's getUpgradeServerSideValue, with the
// tool's one difference: an install under "auto" stays client-side.
func TestServerSideApply(t *testing.T) {
	for _, tc := range []struct {
		flag, recorded string
		install, want  bool
	}{
		{"auto", "ssa", false, true},
		{"", "ssa", false, true},
		{"auto", "csa", false, false},
		{"auto", "", false, false},
		{"true", "", false, true},
		{"true", "csa", false, true},
		{"false", "ssa", false, false},
		{"auto", "", true, false},
		{"true", "", true, true},
	} {
		r := &Result{ApplyMethod: tc.recorded, Install: tc.install}
		if got := r.ServerSideApply(tc.flag); got != tc.want {
			t.Errorf("--server-side=%s, recorded %q, install %v: got %v, want %v", tc.flag, tc.recorded, tc.install, got, tc.want)
		}
	}
	for _, v := range []string{"", "auto", "true", "false"} {
		if err := ValidateServerSide(v); err != nil {
			t.Errorf("ValidateServerSide(%q) = %v", v, err)
		}
	}
	if err := ValidateServerSide("yes"); err == nil {
		t.Error("ValidateServerSide(yes): no error")
	}
}

// TestRecordedServerSide: the flag decides when it says true or false;
// under auto, a record that cannot be read (no storage, no release) or
// holds no apply method (the memory driver's) is client-side.
func TestRecordedServerSide(t *testing.T) {
	memory := &action.Configuration{Releases: storage.Init(driver.NewMemory())}
	rel := &release.Release{Name: "r", Namespace: "ns", Version: 1}
	for _, tc := range []struct {
		name, flag string
		cfg        *action.Configuration
		rel        *release.Release
		want       bool
	}{
		{"true without a record", ServerSideTrue, nil, nil, true},
		{"false", ServerSideFalse, memory, rel, false},
		{"auto without storage", ServerSideAuto, nil, rel, false},
		{"auto without a release", ServerSideAuto, memory, nil, false},
		{"auto, memory driver", ServerSideAuto, memory, rel, false},
		{"unset, memory driver", "", memory, rel, false},
	} {
		if got := RecordedServerSide(t.Context(), tc.cfg, tc.flag, tc.rel); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
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
	snap := Snapshot(memory, []*release.Release{v1}, &releasestate.Recorded{Version: 1, Method: plan.ApplyMethodSSA, OK: true})
	if !RecordedServerSide(t.Context(), snap, ServerSideAuto, v1) {
		t.Error("revision 1: client-side, want the server-side method the snapshot holds")
	}
	if RecordedServerSide(t.Context(), snap, ServerSideAuto, &release.Release{Name: "r", Namespace: "ns", Version: 2}) {
		t.Error("revision 2: server-side, want the storage's answer (client-side)")
	}
}
