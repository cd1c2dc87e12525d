package report

import "testing"

// TestEscapeLines: a diff's lines keep their ends and their length; what
// the YAML encoder leaves raw (a bidirectional control, NEL) is escaped.
func TestEscapeLines(t *testing.T) {
	tests := []struct{ in, want string }{
		{"--- a\n+++ b\n-  x: plain\n+  x: plain too\n", "--- a\n+++ b\n-  x: plain\n+  x: plain too\n"},
		{"+  user: evil\u202egnp.exe\n", "+  user: evil\\u202egnp.exe\n"},
		{"+  x: a\u0085b", "+  x: a\\u0085b"},
	}
	for _, tc := range tests {
		if got := escapeLines(tc.in); got != tc.want {
			t.Errorf("escapeLines(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
