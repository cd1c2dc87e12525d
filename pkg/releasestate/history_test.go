package releasestate

import (
	"testing"

	"helm.sh/helm/v3/pkg/release"
)

// TestRolledBackTo: only a record newer than the attempted revision that
// Helm describes as a rollback names the revision rolled back to.
func TestRolledBackTo(t *testing.T) {
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
			if got := RolledBackTo(rel, 2); got != tt.want {
				t.Errorf("RolledBackTo(v%d %q, 2) = %d, want %d", tt.version, tt.description, got, tt.want)
			}
		})
	}
}

// TestRollbackOf: the revision a rollback's description names, whatever
// its own number (`log` reads every revision); none for any other record.
func TestRollbackOf(t *testing.T) {
	for _, tc := range []struct {
		info *release.Info
		want int
	}{
		{&release.Info{Description: "Rollback to 3"}, 3},
		{&release.Info{Description: "Upgrade complete"}, 0},
		{&release.Info{}, 0},
		{nil, 0},
	} {
		if got := RollbackOf(&release.Release{Version: 1, Info: tc.info}); got != tc.want {
			t.Errorf("RollbackOf(%+v) = %d, want %d", tc.info, got, tc.want)
		}
	}
}
