package verb

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/savedplan"
)

// TestUninstallFlagsPinned: a saved plan of an uninstall pins exactly
// helm uninstall's flags, not the release nor how the run was started.
func TestUninstallFlagsPinned(t *testing.T) {
	req := UninstallRequest{ReleaseName: "db", KeepHistory: true, Cascade: "orphan", Timeout: time.Minute, ForApply: true,
		Saved: &savedplan.Plan{}, SavedMaxAge: time.Hour}
	got := slices.Sorted(maps.Keys(req.flags()))
	if want := "Cascade Description DisableHooks KeepHistory Timeout Wait"; strings.Join(got, " ") != want {
		t.Errorf("pinned %v, want %s", got, want)
	}
}
