package apply

import (
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/release"
)

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
