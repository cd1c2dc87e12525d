package upgrade

import (
	"bytes"
	"errors"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"strings"
	"testing"
)

func TestWriteNotes(t *testing.T) {
	tests := []struct {
		notes string
		hide  bool
		want  string
	}{
		{"Visit http://web\n\n", false, "NOTES:\nVisit http://web\n"},
		{"Visit http://web\n", true, ""},
		{"  \n", false, ""},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		writeNotes(&b, tt.notes, tt.hide)
		if b.String() != tt.want {
			t.Errorf("writeNotes(%q, hide %v) = %q, want %q", tt.notes, tt.hide, b.String(), tt.want)
		}
	}
}

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
