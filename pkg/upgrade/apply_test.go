package upgrade

import (
	"errors"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// TestApplicable: the apply refuses a server-side apply upgrade before
// touching anything, and lets a client-side one through.
func TestApplicable(t *testing.T) {
	for _, m := range []string{"", plan.ApplyMethodCSA} {
		if err := applicable(plan.Release{Name: "r", Namespace: "ns", ApplyMethod: m}); err != nil {
			t.Errorf("apply method %q: %v", m, err)
		}
	}
	err := applicable(plan.Release{Name: "r", Namespace: "ns", ApplyMethod: plan.ApplyMethodSSA})
	if !errors.Is(err, ErrServerSideApply) || !strings.Contains(err.Error(), "Nothing was written") || !strings.Contains(err.Error(), "--server-side=false") {
		t.Errorf("ssa: %v", err)
	}
}
