package render

import (
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/release"
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

// TestRollbackServerSide: a rollback under --server-side=auto follows the
// apply method recorded with the revision rolled back to, as Helm 4's
// prepareRollback does, not the last revision's; true and false decide.
func TestRollbackServerSide(t *testing.T) {
	for _, tc := range []struct {
		flag, last, target string
		want               bool
	}{
		{"auto", "csa", "ssa", true},
		{"", "", "ssa", true},
		{"auto", "ssa", "csa", false},
		{"auto", "ssa", "", false},
		{"auto", "ssa", "ssa", true},
		{"false", "ssa", "ssa", false},
		{"true", "", "", true},
		{"true", "ssa", "csa", true},
	} {
		r := &Result{ApplyMethod: tc.last, RollbackApplyMethod: tc.target, RollbackTo: 1}
		if got := r.ServerSideApply(tc.flag); got != tc.want {
			t.Errorf("--server-side=%s, last %q, target %q: got %v, want %v", tc.flag, tc.last, tc.target, got, tc.want)
		}
	}
}

// TestCheckRollbackFlags: Helm 3's helm rollback has neither
// --server-side nor --force-conflicts, so a release only Helm 3 wrote
// refuses both (auto, the default, passes); --force-conflicts on a
// rollback applied client-side is refused as Helm 4 refuses it; an
// upgrade is not checked here.
func TestCheckRollbackFlags(t *testing.T) {
	for _, tc := range []struct {
		name           string
		res            Result
		flag           string
		forceConflicts bool
		err            string
	}{
		{"helm 3 release, auto", Result{helm3Only: true}, "auto", false, ""},
		{"helm 3 release, true", Result{helm3Only: true}, "true", false, `--server-side=true: release "db" is a Helm 3 release (neither revision 3 nor revision 1 records Helm 4's apply method)`},
		{"helm 3 release, false", Result{helm3Only: true}, "false", false, `--server-side=false: release "db" is a Helm 3 release`},
		{"helm 3 release, force-conflicts", Result{helm3Only: true}, "auto", true, `--force-conflicts: release "db" is a Helm 3 release`},
		{"helm 4 release, true", Result{ApplyMethod: "csa", RollbackApplyMethod: "csa"}, "true", true, ""},
		{"helm 4 release, false", Result{ApplyMethod: "ssa", RollbackApplyMethod: "ssa"}, "false", false, ""},
		{"force-conflicts on an ssa target", Result{ApplyMethod: "csa", RollbackApplyMethod: "ssa"}, "auto", true, ""},
		{"force-conflicts on a csa target", Result{ApplyMethod: "ssa", RollbackApplyMethod: "csa"}, "auto", true, `--force-conflicts: the rollback of release "db" to revision 1 applies client-side (--server-side=auto follows revision 1`},
		{"force-conflicts with false", Result{ApplyMethod: "ssa", RollbackApplyMethod: "ssa"}, "false", true, "applies client-side (--server-side=false)"},
		{"unreadable records are not Helm 3's", Result{}, "true", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.res
			r.RollbackTo, r.Last, r.Next = 1, &release.Release{Version: 3}, &release.Release{Name: "db", Version: 4}
			err := r.CheckRollbackFlags(tc.flag, tc.forceConflicts)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("err %v, want %q", err, tc.err)
			}
		})
	}
	up := &Result{helm3Only: true, Next: &release.Release{Name: "db"}}
	if err := up.CheckRollbackFlags("true", true); err != nil {
		t.Errorf("upgrade: %v", err)
	}
}
