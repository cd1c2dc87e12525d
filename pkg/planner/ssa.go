package planner

import (
	"context"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/jsonvalue"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
)

// decideApply decides locally, where the server's answer cannot differ,
// what the dry-run of Helm 4's server-side apply of next would answer
// (predict.DecideApply): a no-op or a conflict when the applied
// configuration is the last release's, or, for a kind whose change the
// Helm 3 path derives (predict.Derivable), the merged object of a change
// (ApplyChange), which update derives a verdict from as it does for a
// Helm 3 patch (predict.DeriveApply). Anything else, a conflict of a
// changed configuration, and what admission may see, goes to the server.
func (p *Planner) decideApply(ctx context.Context, rel plan.Release, prev, next *manifest.Object, liveObj *unstructured.Unstructured) predict.ApplyDecision {
	asked := func(why string) predict.ApplyDecision {
		p.Stats.asked(why)
		return predict.ApplyDecision{Verdict: predict.ApplyAsk, Why: why}
	}
	switch {
	case p.ServerDryRun == ServerDryRunAll:
		return asked("--server-dry-run=all")
	case rel.ToServerSide:
		return asked("moving to server-side apply")
	case prev == nil:
		return asked("not in the last release")
	case !p.Patcher.StrategicMerge(next.GVK):
		// A custom resource is merged by its CRD's structural schema,
		// which the published OpenAPI document need not match.
		return asked("custom resource")
	}
	changed, derivable := configurationChange(prev, next, rel)
	if changed && !derivable {
		return asked("the chart changes it")
	}
	tc, err := p.Cluster.Schemas.TypeConverter(ctx, next.GVK.GroupVersion())
	if err != nil {
		return asked("no schema")
	}
	d := predict.DecideApply(tc, liveObj, next.Obj)
	switch {
	case d.Verdict == predict.ApplyAsk:
		return asked(d.Why)
	case d.Verdict == predict.ApplyChange:
		// update derives it, or asks (Planner.derive counts either).
		return d
	case d.Verdict == predict.ApplyConflict && changed:
		// A changed configuration's conflicts are the server's to report,
		// as for any change Helm 3's path does not derive.
		return asked("the chart changes it")
	case d.Verdict == predict.ApplyConflict:
		// The field manager finds a conflict before admission runs; what a
		// forced apply stores is still the server's to say.
		p.Stats.asked("forced only: conflict found in the managed fields")
		return d
	}
	// A no-op still passes admission, which may refuse it.
	if who := p.Cluster.Observers.Observed(ctx, next); who != "" {
		return asked("seen by " + who)
	}
	if why := p.Cluster.Observers.Warns(ctx, liveObj, p.ServerVersion); why != "" {
		return asked(why) // and warns about it
	}
	if why := p.Cluster.Observers.PoliciesAdmit(ctx, liveObj, liveObj, true, p.ServerVersion); why != "" {
		return asked(why)
	}
	p.Stats.derived()
	return d
}

// configurationChange reports whether Helm applies next other than it
// applied prev (the last release's object with the metadata Helm adds,
// which next carries already) and, if so, whether the change may be one
// predict.Derive predicts: a derivable kind, whose configuration differs
// only in the fields Derive may change (predict.Underivable), so the field
// manager's merge is not run for changes that must be asked.
func configurationChange(prev, next *manifest.Object, rel plan.Release) (changed, derivable bool) {
	// addHelmMetadata replaces the metadata it changes: a copy of the top
	// level is enough to leave prev as it is.
	was := &unstructured.Unstructured{Object: maps.Clone(prev.Obj.Object)}
	addHelmMetadata(was, rel.Name, rel.Namespace)
	if jsonvalue.SemanticEqual(was.Object, next.Obj.Object) {
		return false, false
	}
	if !predict.Derivable(next.GVK.GroupKind()) {
		return true, false
	}
	return true, jsonvalue.SemanticEqual(predict.Underivable(was.Object), predict.Underivable(next.Obj.Object))
}

// applyNoop makes c the no-op decideApply found: nothing is sent, and the
// drift shown is what the live object holds that the apply leaves alone,
// with its owners.
func applyNoop(c *plan.Change, original, liveObj, target *unstructured.Unstructured) {
	c.Action = plan.ActionNoop
	c.Prediction = plan.PredictionManagedFields
	c.Drift = classify.Drift(original, liveObj, target, liveObj)
	if len(c.Drift) > 0 {
		ownDrift(c, liveObj)
	}
}

// ownDrift names the field managers other than Helm that own each drifted
// field of c, and returns the live object's ownership.
func ownDrift(c *plan.Change, liveObj *unstructured.Unstructured) *classify.Ownership {
	owners := classify.Owners(liveObj, predict.FieldManager)
	for i := range c.Drift {
		c.Drift[i].Manager = owners.Owner(c.Drift[i].Path)
	}
	return owners
}
