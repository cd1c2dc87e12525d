package planner

import (
	"strings"
	"testing"
)

func TestParseRulesFile(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []IgnoreRule
		err  string // in the error; "" means none
	}{
		{name: "empty", data: ""},
		{name: "rules", data: "ignore:\n- metadata.annotations[checksum/config]\n- Deployment/web:spec.replicas\n",
			want: []IgnoreRule{
				{Rule: "metadata.annotations[checksum/config]", Path: "metadata.annotations[checksum/config]", In: "c/.safe-upgrade.yaml#1"},
				{Rule: "Deployment/web:spec.replicas", Kind: "Deployment", Name: "web", Path: "spec.replicas", In: "c/.safe-upgrade.yaml#2"},
			}},
		{name: "unknown field", data: "ignores:\n- spec.replicas\n", err: `rules file c/.safe-upgrade.yaml: error unmarshaling JSON: while decoding JSON: json: unknown field "ignores"`},
		{name: "rule as a map", data: "ignore:\n- {path: spec.replicas}\n", err: "rules file c/.safe-upgrade.yaml: error unmarshaling JSON"},
		{name: "duplicate field", data: "ignore: [a]\nignore: [b]\n", err: `rules file c/.safe-upgrade.yaml: error converting YAML to JSON: yaml: unmarshal errors:`},
		{name: "bad rule", data: "ignore: [\"ConfigMap:\"]\n", err: `rules file c/.safe-upgrade.yaml: ignore[0] "ConfigMap:": want FIELD_PATH, KIND:FIELD_PATH or KIND/NAME:FIELD_PATH`},
		{name: "not a map", data: "- spec.replicas\n", err: "rules file c/.safe-upgrade.yaml:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseRulesFile("c/.safe-upgrade.yaml", []byte(tt.data))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("rule %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}
