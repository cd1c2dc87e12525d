package verb

// What every verb hands the planner of a Helm release: its render (or
// its stored revisions), its hooks, its chart's name.

import (
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
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

// plannerInput hands the render res to the planner as req asks: its second
// render (again), the last release's objects split early (prevSplit), the
// user's ignore rules, and the apply method and forces Helm will use.
func (req PlanRequest) plannerInput(res *render.Result, again string, prevSplit *manifest.Background, rules []planner.IgnoreRule) planner.Input {
	in := plannerInput(res, req.Render.SkipCRDs)
	in.TakeOwnership = req.Render.TakeOwnership
	in.HooksDisabled = req.Render.DisableHooks
	in.SecondRender = again
	in.PreviousSplit = prevSplit
	in.Ignore = rules
	in.RestartStale = req.Apply.RestartStale
	in.Release.ApplyMethod = plan.ApplyMethodCSA
	if res.ServerSideApply(req.Render.ServerSide) {
		in.Release.ApplyMethod = plan.ApplyMethodSSA
		in.Release.ToServerSide = !res.Install && res.ApplyMethod != plan.ApplyMethodSSA
	}
	in.Release.ForceConflicts = req.Render.ForceConflicts
	in.Release.ForceReplace = req.Apply.Force
	return in
}

// logStages logs, with --debug, the planner's stages: the bulk read of the
// live objects, and the pass over each object where predictions (dry-runs or
// derivations) and classifications run concurrently.
func (c *Config) logStages(s *planner.Stats) {
	c.logStage("live", s.Live, s.LiveRequests, "LISTs of the objects")
	c.logStage("predict+classify", s.Objects, s.ObjectRequests, fmt.Sprintf("summed over the objects evaluated concurrently: predict %s, classify %s; %s",
		s.Predict.Round(time.Millisecond), s.Classify.Round(time.Millisecond), s))
}

// planner is a planner over cluster with the run's masker and sanitiser.
func (c *Config) planner(cluster planner.Cluster, serverVersion string) *planner.Planner {
	p := planner.New(cluster, serverVersion)
	p.Masker, p.Sanitizer = c.Masker, c.Sanitizer
	return p
}
