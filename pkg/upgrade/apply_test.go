package upgrade

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
