package planner

import (
	"context"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

const randomCM = `---
# Source: app/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {token: %s, level: %s}
`

func cm(token, level string) string {
	return strings.Replace(strings.Replace(randomCM, "%s", token, 1), "%s", level, 1)
}

// TestRegenerated: fields that differ between two renders of the same
// inputs are labelled and, alone, neither count as a change nor block.
func TestRegenerated(t *testing.T) {
	tests := []struct {
		name              string
		base, head, again string
		object            string
		regenerated       bool // the change is Regenerated
		hasChanges        bool
		destructive       bool
		labelled          []string // reason paths marked regenerated
		plain             []string // reason paths not marked
	}{
		{name: "random token only", base: cm("a", "info"), head: cm("b", "info"), again: cm("c", "info"), object: "cfg",
			regenerated: true, labelled: []string{"data.token"}},
		{name: "random token and a real change", base: cm("a", "info"), head: cm("b", "debug"), again: cm("c", "debug"), object: "cfg",
			hasChanges: true, labelled: []string{"data.token"}, plain: []string{"data.level"}},
		{name: "same render twice: nothing marked", base: cm("a", "info"), head: cm("a", "debug"), again: cm("a", "debug"), object: "cfg",
			hasChanges: true, plain: []string{"data.level"}},
		{name: "random value in an immutable field stays destructive", base: pvc("data", ""),
			head: strings.Replace(pvc("data", ""), "fast", "x1", 1), again: strings.Replace(pvc("data", ""), "fast", "x2", 1), object: "data",
			hasChanges: true, destructive: true, labelled: []string{"spec.storageClassName"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(Offline{Release: "app", Namespace: "prod"}, "").Plan(context.Background(), Input{
				Release:          plan.Release{Name: "app", Namespace: "prod"},
				PreviousManifest: tt.base, NextManifest: tt.head, SecondRender: tt.again,
			})
			if err != nil {
				t.Fatal(err)
			}
			if p.HasChanges() != tt.hasChanges {
				t.Errorf("HasChanges = %v, want %v", p.HasChanges(), tt.hasChanges)
			}
			c := p.Changes[0]
			if c.ID.Name != tt.object || c.Action != plan.ActionUpdate {
				t.Fatalf("want an update of %s, got %+v", tt.object, c)
			}
			if c.Regenerated != tt.regenerated || c.Destructive != tt.destructive {
				t.Errorf("regenerated %v destructive %v, want %v %v", c.Regenerated, c.Destructive, tt.regenerated, tt.destructive)
			}
			if tt.regenerated && (p.Summary().Regenerated != 1 || p.Summary().InPlace != 0) {
				t.Errorf("summary %+v: want it counted as regenerated, not by class", p.Summary())
			}
			marked := map[string]bool{}
			for _, r := range c.Reasons {
				marked[r.Path] = r.Regenerated
			}
			for _, path := range tt.labelled {
				if v, ok := marked[path]; !ok || !v {
					t.Errorf("%s not marked regenerated: %+v", path, c.Reasons)
				}
			}
			for _, path := range tt.plain {
				if v, ok := marked[path]; !ok || v {
					t.Errorf("%s: want an unmarked reason: %+v", path, c.Reasons)
				}
			}
		})
	}
}

// TestRegeneratedCreate: a new object's regenerated fields are named.
func TestRegeneratedCreate(t *testing.T) {
	p, err := New(Offline{Release: "app", Namespace: "prod"}, "").Plan(context.Background(), Input{
		Release:      plan.Release{Name: "app", Namespace: "prod"},
		NextManifest: cm("b", "info"), SecondRender: cm("c", "info"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Changes[0]; c.Action != plan.ActionCreate || !strings.Contains(strings.Join(c.Notes, "\n"), "regenerated on every render: data.token") {
		t.Fatalf("create: %+v", c)
	}
}
