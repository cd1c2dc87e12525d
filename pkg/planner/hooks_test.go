package planner

import (
	"context"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

func hookJob(name, image string) HookManifest {
	return HookManifest{Kind: "Job", Name: name, Events: []string{"pre-upgrade"}, DeletePolicies: []string{"before-hook-creation"},
		Manifest: "apiVersion: batch/v1\nkind: Job\nmetadata: {name: " + name + "}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: m, image: \"" + image + "\"}]\n"}
}

// hookOn is a hook Job that runs on event.
func hookOn(name, event string) HookManifest {
	h := hookJob(name, name+":1")
	h.Events = []string{event}
	return h
}

func TestHooks(t *testing.T) {
	tests := []struct {
		name       string
		prev, next []HookManifest
		op         plan.Operation
		disabled   bool
		want       map[string]plan.Action
		runs       map[string]bool
	}{
		{name: "changed, new, unchanged and dropped hooks",
			prev: []HookManifest{hookJob("migrate", "m:1"), hookJob("same", "s:1"), hookJob("gone", "g:1")},
			next: []HookManifest{hookJob("migrate", "m:2"), hookJob("same", "s:1"), hookJob("fresh", "f:1")},
			want: map[string]plan.Action{"migrate": plan.ActionUpdate, "same": plan.ActionNoop, "fresh": plan.ActionCreate, "gone": plan.ActionDelete},
			runs: map[string]bool{"migrate": true, "same": true, "fresh": true, "gone": false}},
		{name: "--no-hooks: none runs", prev: []HookManifest{hookJob("migrate", "m:1")}, next: []HookManifest{hookJob("migrate", "m:2")}, disabled: true,
			want: map[string]plan.Action{"migrate": plan.ActionUpdate}, runs: map[string]bool{"migrate": false}},
		{name: "an install does not run pre-upgrade hooks", next: []HookManifest{hookJob("migrate", "m:2")}, op: plan.OperationInstall,
			want: map[string]plan.Action{"migrate": plan.ActionCreate}, runs: map[string]bool{"migrate": false}},
		{name: "an install runs pre-install hooks", next: []HookManifest{hookOn("seed", "pre-install")}, op: plan.OperationInstall,
			want: map[string]plan.Action{"seed": plan.ActionCreate}, runs: map[string]bool{"seed": true}},
		{name: "an upgrade, named, runs pre-upgrade hooks", next: []HookManifest{hookJob("migrate", "m:2")}, op: plan.OperationUpgrade,
			want: map[string]plan.Action{"migrate": plan.ActionCreate}, runs: map[string]bool{"migrate": true}},
		{name: "a rollback runs its own events only", next: []HookManifest{hookJob("migrate", "m:2"), hookOn("restore", "post-rollback")}, op: plan.OperationRollback,
			want: map[string]plan.Action{"migrate": plan.ActionCreate, "restore": plan.ActionCreate}, runs: map[string]bool{"migrate": false, "restore": true}},
		{name: "an uninstall runs the delete hooks", next: []HookManifest{hookJob("migrate", "m:2"), hookOn("backup", "pre-delete")}, op: plan.OperationUninstall,
			want: map[string]plan.Action{"migrate": plan.ActionCreate, "backup": plan.ActionCreate}, runs: map[string]bool{"migrate": false, "backup": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(Offline{Release: "app", Namespace: "prod"}.Parts(), "").Plan(context.Background(), Input{
				Release: plan.Release{Name: "app", Namespace: "prod", Operation: tt.op},
				Hooks:   tt.next, PreviousHooks: tt.prev, HooksDisabled: tt.disabled,
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Hooks) != len(tt.want) {
				t.Fatalf("hooks %+v, want %d", p.Hooks, len(tt.want))
			}
			for _, h := range p.Hooks {
				if h.Action != tt.want[h.Name] || h.RunsAtApply != tt.runs[h.Name] {
					t.Errorf("%s: action %s runs %v, want %s %v", h.Name, h.Action, h.RunsAtApply, tt.want[h.Name], tt.runs[h.Name])
				}
				if h.ID.Kind != "Job" || h.ID.Namespace != "prod" {
					t.Errorf("%s: id %v", h.Name, h.ID)
				}
			}
			if tt.disabled && !strings.Contains(strings.Join(p.Notes, "\n"), "--no-hooks") {
				t.Errorf("notes %q do not say --no-hooks", p.Notes)
			}
		})
	}
}
