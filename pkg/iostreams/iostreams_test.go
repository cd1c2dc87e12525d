package iostreams

import "testing"

// TestCanRedraw: progress is redrawn in place only on a terminal that
// moves its cursor, and not when NO_COLOR asks for plain output.
func TestCanRedraw(t *testing.T) {
	tests := []struct {
		name string
		s    Streams
		want bool
	}{
		{"terminal", Streams{ErrTTY: true}, true},
		{"not a terminal (CI)", Streams{}, false},
		{"TERM=dumb", Streams{ErrTTY: true, Dumb: true}, false},
		{"NO_COLOR", Streams{ErrTTY: true, NoColor: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.CanRedraw(); got != tt.want {
				t.Errorf("CanRedraw() = %v, want %v", got, tt.want)
			}
		})
	}
}
