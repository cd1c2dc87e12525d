package live

import "testing"

// TestClaimTemplate: the StatefulSet claim-naming rule read both ways; a
// name that only looks alike (another set, no ordinal, a suffix) is no claim
// of the set.
func TestClaimTemplate(t *testing.T) {
	templates := []string{"data", "logs"}
	tests := []struct {
		name, want string
		ok         bool
	}{
		{name: ClaimName("data", "db", 0), want: "data", ok: true},
		{name: ClaimName("logs", "db", 12), want: "logs", ok: true},
		{name: "data-db-"},
		{name: "data-db"},
		{name: "data-db-0-x"},
		{name: "data-db2-0"},
		{name: "data-other-db-0"},
		{name: "cache-db-0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ClaimTemplate(tt.name, "db", templates)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("ClaimTemplate(%q) = %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.ok)
			}
		})
	}
	if got := ClaimName("data", "db", 3); got != "data-db-3" {
		t.Fatalf("ClaimName = %q, want data-db-3", got)
	}
}
