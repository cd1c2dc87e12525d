package verb

import (
	"bytes"
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

// TestDescribeCaller: an upgrade run through the helm shim names its caller
// in the release description (the audit trail `helm history` shows).
func TestDescribeCaller(t *testing.T) {
	for _, tt := range []struct{ caller, want string }{
		{"", "safe-upgrade: 1 rolling"},
		{"helmfile", "safe-upgrade: 1 rolling, run by helmfile through the helm shim"},
	} {
		c := &Config{Caller: tt.caller}
		if got := c.describe("safe-upgrade: 1 rolling"); got != tt.want {
			t.Errorf("caller %q: %q, want %q", tt.caller, got, tt.want)
		}
	}
}
