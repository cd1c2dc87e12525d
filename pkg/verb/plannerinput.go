package verb

// What every verb hands the planner of a Helm release: its render (or
// its stored revisions), its hooks, its chart's name.

import (
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// hookManifests hands Helm's hooks to the planner.
func hookManifests(hooks []*release.Hook) []planner.HookManifest {
	out := make([]planner.HookManifest, 0, len(hooks))
	for _, h := range hooks {
		hm := planner.HookManifest{Kind: h.Kind, Name: h.Name, Manifest: h.Manifest, Weight: h.Weight}
		for _, e := range h.Events {
			hm.Events = append(hm.Events, string(e))
		}
		for _, d := range h.DeletePolicies {
			hm.DeletePolicies = append(hm.DeletePolicies, string(d))
		}
		if len(hm.DeletePolicies) == 0 {
			hm.DeletePolicies = []string{string(release.HookBeforeHookCreation)} // Helm's default
		}
		out = append(out, hm)
	}
	return out
}

// plannerInput hands the render to the planner, with the chart's crds/
// directory and Helm's rule for it as a note (skipCRDs is --skip-crds).
func plannerInput(res *render.Result, skipCRDs bool) planner.Input {
	next := res.Next
	in := planner.Input{
		Release: plan.Release{
			Name:      next.Name,
			Namespace: next.Namespace,
			Revision:  next.Version,
			Chart:     chartRef(next.Chart),
			Operation: plan.InstallOrUpgrade(res.Install),
		},
		NextManifest: next.Manifest,
	}
	if res.Previous != nil {
		in.PreviousManifest = res.Previous.Manifest
		in.Release.CurrentRevision = res.Previous.Version
	}
	in.Hooks = hookManifests(next.Hooks)
	if res.Previous != nil {
		in.PreviousHooks = hookManifests(res.Previous.Hooks)
	}
	if res.RollbackTo > 0 {
		// Helm's rollback never touches the chart's crds/ directory.
		in.Release.Operation, in.Release.RollbackTo = plan.OperationRollback, res.RollbackTo
		return in
	}
	in.CRDs, in.SkipCRDs = chartCRDs(res.Chart), skipCRDs
	if note := crdsNote(res.Chart, res.Install, skipCRDs); note != "" {
		in.Notes = append(in.Notes, note)
	}
	return in
}

// chartRef names a release's chart as NAME-VERSION. A stored release record
// can be written by anyone who may write Secrets in its namespace (a
// rollback's target, the revision an uninstall deletes): one without its
// chart is named, not dereferenced.
func chartRef(ch *chart.Chart) string {
	if ch == nil || ch.Metadata == nil {
		return "(no chart recorded)"
	}
	return ch.Metadata.Name + "-" + ch.Metadata.Version
}
