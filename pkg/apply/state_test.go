package apply

import (
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/release"
)

// TestRollbackTarget: only a record newer than the attempted revision that
// Helm describes as a rollback names the revision rolled back to.
func TestRollbackTarget(t *testing.T) {
	tests := []struct {
		name        string
		version     int
		description string
		want        int
	}{
		{"atomic rollback", 3, "Rollback to 1", 1},
		{"the attempted revision itself", 2, "Rollback to 1", 0},
		{"an upgrade", 3, "Upgrade complete", 0},
		{"no description", 3, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rel := &release.Release{Version: tt.version, Info: &release.Info{Description: tt.description}}
			if got := rollbackTarget(rel, 2); got != tt.want {
				t.Errorf("rollbackTarget(v%d %q, 2) = %d, want %d", tt.version, tt.description, got, tt.want)
			}
		})
	}
}

// TestUpgradeErrorSaysRollback: the error of an --atomic upgrade that Helm
// rolled back says to which revision.
func TestUpgradeErrorSaysRollback(t *testing.T) {
	e := &UpgradeError{Name: "app", Namespace: "demo", Attempted: 2, AttemptedStatus: release.StatusFailed,
		Last: 3, LastStatus: release.StatusDeployed, RolledBackTo: 1}
	want := "revision 2 is failed; the release is now deployed at revision 3: Helm's --atomic rolled the release back to revision 1"
	if !strings.Contains(e.Error(), want) {
		t.Errorf("error %q does not say %q", e.Error(), want)
	}
	e.RolledBackTo = 0
	if strings.Contains(e.Error(), "rolled") {
		t.Errorf("error %q says a rollback that did not happen", e.Error())
	}
}
