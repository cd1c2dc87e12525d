package planner

import (
	"slices"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// HookManifest is one Helm hook as the render hands it over.
type HookManifest struct {
	Kind, Name     string
	Manifest       string
	Events         []string
	DeletePolicies []string
	Weight         int
}

// hookEvents are the hook events each operation runs (Helm's
// helm.sh/hook values).
var hookEvents = map[plan.Operation][]string{
	plan.OperationInstall:   {"pre-install", "post-install"},
	plan.OperationUpgrade:   {"pre-upgrade", "post-upgrade"},
	plan.OperationRollback:  {"pre-rollback", "post-rollback"},
	plan.OperationUninstall: {"pre-delete", "post-delete"},
}

// hooks compares the new release's hooks with the last release's, by kind
// and name, in the new release's order (Helm's run order), then the hooks
// only the last release had.
func (p *Planner) hooks(in Input) ([]plan.Hook, error) {
	parse := func(h HookManifest) (*manifest.Object, error) {
		set, err := manifest.Split("hook "+h.Kind+"/"+h.Name, h.Manifest, in.Release.Namespace, p.Cluster)
		if err != nil || set.Len() == 0 {
			return nil, err
		}
		return set.Objects()[0], nil
	}
	type key struct{ kind, name string }
	prev := map[key]HookManifest{}
	for _, h := range in.PreviousHooks {
		prev[key{h.Kind, h.Name}] = h
	}
	var out []plan.Hook
	seen := map[key]bool{}
	add := func(h HookManifest, action plan.Action, before, after *manifest.Object) {
		ph := plan.Hook{Kind: h.Kind, Name: h.Name, Events: h.Events, DeletePolicies: h.DeletePolicies, Weight: h.Weight, Action: action}
		obj := after
		if obj == nil {
			obj = before
		}
		if obj != nil {
			ph.ID = obj.ID
		}
		if before != nil {
			ph.Before = p.shown(before.Obj)
		}
		if after != nil {
			ph.After = p.shown(after.Obj)
		}
		if action != plan.ActionDelete && !in.HooksDisabled {
			for _, e := range h.Events {
				ph.RunsAtApply = ph.RunsAtApply || slices.Contains(hookEvents[in.Release.Op()], e)
			}
		}
		out = append(out, ph)
	}
	for _, h := range in.Hooks {
		k := key{h.Kind, h.Name}
		seen[k] = true
		next, err := parse(h)
		if err != nil {
			return nil, err
		}
		old, had := prev[k]
		if !had {
			add(h, plan.ActionCreate, nil, next)
			continue
		}
		before, err := parse(old)
		if err != nil {
			return nil, err
		}
		action := plan.ActionNoop
		if before == nil || next == nil || !equalObjects(before, next) {
			action = plan.ActionUpdate
		}
		add(h, action, before, next)
	}
	for _, h := range in.PreviousHooks {
		if seen[key{h.Kind, h.Name}] {
			continue
		}
		before, err := parse(h)
		if err != nil {
			return nil, err
		}
		add(h, plan.ActionDelete, before, nil)
	}
	return out, nil
}

func equalObjects(a, b *manifest.Object) bool {
	return len(classify.ChangedPaths(a.Obj.Object, b.Obj.Object)) == 0
}
