package gcbudget

import "testing"

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"neither set", nil, true},
		{"GOGC set", map[string]string{"GOGC": "200"}, false},
		{"GOGC off", map[string]string{"GOGC": "off"}, false},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := enabled(func(k string) string { return tc.env[k] }); got != tc.want {
				t.Errorf("enabled = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOutgrown(t *testing.T) {
	for _, tc := range []struct {
		live, budget uint64
		want         bool
	}{
		{0, Heap, false},
		{Heap / 4, Heap, false},
		{Heap / 2, Heap, false},
		{Heap/2 + 1, Heap, true},
		{2 * Heap, Heap, true},
	} {
		if got := outgrown(tc.live, tc.budget); got != tc.want {
			t.Errorf("outgrown(%d, %d) = %v, want %v", tc.live, tc.budget, got, tc.want)
		}
	}
}
