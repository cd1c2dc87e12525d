package planner

import (
	"context"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

func TestParseIgnoreRules(t *testing.T) {
	tests := []struct {
		in         string
		kind, name string
		path       string
		err        bool
	}{
		{in: "metadata.annotations[checksum/config]", path: "metadata.annotations[checksum/config]"},
		{in: "metadata.annotations[a:b]", path: "metadata.annotations[a:b]"},
		{in: "ConfigMap:data.level", kind: "ConfigMap", path: "data.level"},
		{in: "ConfigMap/cfg:data", kind: "ConfigMap", name: "cfg", path: "data"},
		{in: "ConfigMap:", err: true},
		{in: ":data", err: true},
	}
	for _, tt := range tests {
		rules, err := ParseIgnoreRules([]string{tt.in})
		if tt.err {
			if err == nil {
				t.Errorf("%q: no error", tt.in)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if r := rules[0]; r.Kind != tt.kind || r.Name != tt.name || r.Path != tt.path || r.Rule != tt.in {
			t.Errorf("%q: %+v", tt.in, r)
		}
	}
}

func TestIgnore(t *testing.T) {
	tests := []struct {
		name    string
		rules   []string
		head    string
		ignored bool
		changes bool
		destr   bool
	}{
		{name: "rule covers the only change", rules: []string{"ConfigMap/cfg:data.level"}, head: cm("a", "debug"), ignored: true},
		{name: "rule for another object", rules: []string{"ConfigMap/other:data.level"}, head: cm("a", "debug"), changes: true},
		{name: "rule covers one of two changes", rules: []string{"data.level"}, head: cm("b", "debug"), changes: true},
		{name: "never for an immutable field", rules: []string{"spec.storageClassName"}, head: strings.Replace(pvc("data", ""), "fast", "slow", 1),
			changes: true, destr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules, err := ParseIgnoreRules(tt.rules)
			if err != nil {
				t.Fatal(err)
			}
			base := cm("a", "info")
			if strings.Contains(tt.head, "PersistentVolumeClaim") {
				base = pvc("data", "")
			}
			p, err := New(Offline{Release: "app", Namespace: "prod"}.Parts(), "").Plan(context.Background(), Input{
				Release: plan.Release{Name: "app", Namespace: "prod"}, PreviousManifest: base, NextManifest: tt.head, Ignore: rules,
			})
			if err != nil {
				t.Fatal(err)
			}
			c := p.Changes[0]
			if c.Ignored != tt.ignored || p.HasChanges() != tt.changes || c.Destructive != tt.destr {
				t.Errorf("ignored %v changes %v destructive %v, want %v %v %v: %+v", c.Ignored, p.HasChanges(), c.Destructive, tt.ignored, tt.changes, tt.destr, c)
			}
			if tt.ignored && (c.Reasons[0].IgnoredBy != tt.rules[0] || p.Summary().Ignored != 1) {
				t.Errorf("reason %+v summary %+v", c.Reasons[0], p.Summary())
			}
		})
	}
}

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
