package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// patched predicts and classifies the update as Helm makes it without
// --force: a three-way patch (Helm 3, patched3), or a server-side apply
// (Helm 4, patched4).
func (p *Planner) patched(ctx context.Context, c *plan.Change, in Input, prev, next *manifest.Object, liveObj *unstructured.Unstructured) error {
	if in.Release.ServerSide() {
		return p.patched4(ctx, c, in, prev, next, liveObj)
	}
	return p.patched3(ctx, c, in.Release, prev, next, liveObj)
}

// patched3 predicts Helm 3's update: the three-way patch it sends, derived
// locally where the server's answer cannot differ, else asked of the
// server as a dry-run.
func (p *Planner) patched3(ctx context.Context, c *plan.Change, rel plan.Release, prev, next *manifest.Object, liveObj *unstructured.Unstructured) error {
	secret := redact.Sensitive(liveObj) // fail closed
	original := objectOf(prev)
	patch, pt, err := p.threeWay(c, original, next, liveObj)
	if err != nil {
		return err
	}
	if predict.Empty(patch) {
		// Helm sends nothing for an empty patch. Helm 4's server-side
		// apply sends every object, and may conflict even when nothing
		// changes.
		c.Action = plan.ActionNoop
		c.Drift = classify.Drift(original, liveObj, next.Obj, liveObj)
		return nil
	}
	u := p.updateOf(c, secret, original, next, liveObj)
	start := time.Now()
	predicted := p.derive(ctx, next, liveObj, false, func() (*unstructured.Unstructured, string) { return predict.Derive(liveObj, patch, pt) })
	if predicted != nil {
		p.derived(c, &u, predicted)
	} else {
		if err := p.local(c, &u, liveObj, patch, pt); err != nil {
			return err
		}
		if predicted, err = p.dryRun(ctx, c, &u, next, pt, patch); err != nil {
			return err
		}
	}
	p.Stats.add(stagePredict, start)
	p.classified(c, u, predicted, original, liveObj, next)
	return nil
}

// patched4 predicts Helm 4's update: a server-side apply, decided from the
// managed fields where they decide it (a no-op, or a change derived
// locally), else asked of the server as a dry-run; its conflicts with
// other field managers make the verdict.
func (p *Planner) patched4(ctx context.Context, c *plan.Change, in Input, prev, next *manifest.Object, liveObj *unstructured.Unstructured) error {
	secret := redact.Sensitive(liveObj) // fail closed
	rel := in.Release
	original := objectOf(prev)
	var decided predict.ApplyDecision
	// decideApply's local merge is Helm's field manager's: another
	// applier's apply is the server's to answer.
	if in.Applier == nil {
		decided = p.decideApply(ctx, rel, prev, next, liveObj)
		if decided.Verdict == predict.ApplyNoop {
			applyNoop(c, original, liveObj, next.Obj)
			return nil
		}
	}
	u := p.updateOf(c, secret, original, next, liveObj)
	var predicted *unstructured.Unstructured
	var conflicts []predict.Conflict
	start := time.Now()
	if decided.Verdict == predict.ApplyChange {
		predicted = p.derive(ctx, next, liveObj, true, func() (*unstructured.Unstructured, string) { return predict.DeriveApply(liveObj, decided.Merged) })
	}
	if predicted != nil {
		p.derived(c, &u, predicted)
	} else {
		// Helm 4 sends no patch: the local form of the apply asked of the
		// server is built from Helm's three-way patch.
		patch, pt, err := p.threeWay(c, original, next, liveObj)
		if err != nil {
			return err
		}
		if err := p.local(c, &u, liveObj, patch, pt); err != nil {
			return err
		}
		if predicted, conflicts, err = p.dryRunApply(ctx, c, &u, next, rel.ToServerSide, decided.Conflicts); err != nil {
			return err
		}
	}
	p.Stats.add(stagePredict, start)
	p.classified(c, u, predicted, original, liveObj, next)
	if len(c.Drift) > 0 || len(conflicts) > 0 { // the owners are read for these only
		owners := ownDrift(c, liveObj)
		if len(conflicts) > 0 {
			conflicted(c, conflicts, owners, u.Live, u.Target, rel.ForceConflicts)
			if in.Applier != nil && in.Applier.Takes != "" {
				forcedBy(c, in.Applier.Takes)
			}
		}
	}
	return nil
}

// objectOf is o's object, nil when o is (an object the last release does
// not hold).
func objectOf(o *manifest.Object) *unstructured.Unstructured {
	if o == nil {
		return nil
	}
	return o.Obj
}

// threeWay is Helm's three-way patch of the live object from the last
// release's form to the new one.
func (p *Planner) threeWay(c *plan.Change, original *unstructured.Unstructured, next *manifest.Object, liveObj *unstructured.Unstructured) ([]byte, types.PatchType, error) {
	patch, pt, err := p.Patcher.Patch(original, next.Obj, liveObj)
	if err != nil {
		return nil, "", fmt.Errorf("%s: building the patch Helm would send: %w", c.ID, err)
	}
	return patch, pt, nil
}

// updateOf starts the classification of an update: the change shows the
// live object, and the update holds every form masked of Secret values.
func (p *Planner) updateOf(c *plan.Change, secret bool, original *unstructured.Unstructured, next *manifest.Object, liveObj *unstructured.Unstructured) classify.Update {
	c.Before = p.shown(liveObj)
	return classify.Update{GroupKind: schema.GroupKind{Group: c.ID.Group, Kind: c.ID.Kind},
		Live: p.Masker.Object(liveObj), Secret: secret,
		Original: p.Masker.Object(original), Target: p.Masker.Object(next.Obj)}
}

// derived records a prediction derived locally: the derived object is the
// patch applied locally, too.
func (p *Planner) derived(c *plan.Change, u *classify.Update, predicted *unstructured.Unstructured) {
	masked := p.Masker.Object(predicted)
	u.Predicted, u.Local, u.Derived = masked, masked, true
	c.Prediction = plan.PredictionDerived
}

// local records the patch applied locally, what the classification
// compares the server's answer with.
func (p *Planner) local(c *plan.Change, u *classify.Update, liveObj *unstructured.Unstructured, patch []byte, pt types.PatchType) error {
	local, err := p.Patcher.ApplyLocal(liveObj, patch, pt)
	if err != nil {
		return fmt.Errorf("%s: %w", c.ID, err)
	}
	u.Local = p.Masker.Object(local)
	return nil
}

// conflicted turns an update whose server-side apply conflicts with other
// field managers into its verdict. Helm 4's upgrade fails on a conflict, so
// without --force-conflicts the change is invalid and blocks; with it, the
// apply takes the fields from their owners: a destructive change to
// acknowledge, of the class the forced apply has. live and target are
// masked for Secrets.
func conflicted(c *plan.Change, conflicts []predict.Conflict, owners *classify.Ownership, live, target *unstructured.Unstructured, force bool) {
	forced := c.Verdict()
	if c.Action == plan.ActionNoop {
		forced = "in-place"
	}
	var reasons []plan.Reason
	for _, cf := range conflicts {
		path := owners.Path(cf.Path)
		msg := fmt.Sprintf("conflict with field manager %q: Helm 4's server-side apply fails here; with --force-conflicts it takes the field from %q and the update is %s", cf.Manager, cf.Manager, forced)
		if force {
			msg = fmt.Sprintf("owned by field manager %q: --force-conflicts takes the field from it (the chart's value replaces %q's, and Helm becomes its owner)", cf.Manager, cf.Manager)
		}
		reasons = append(reasons, plan.Reason{Path: path, Message: msg, Source: plan.SourceServer, Manager: cf.Manager,
			Before: classify.ValueAt(live, path), After: classify.ValueAt(target, path)})
	}
	c.Action = plan.ActionUpdate
	c.Destructive = true
	if force {
		c.Reasons = append(reasons, c.Reasons...)
		if c.Class == plan.ClassNone {
			c.Class = plan.ClassInPlace
		}
		return
	}
	// The upgrade fails: what the forced apply would do is a note, and a
	// conflicting field's drift is not reverted by it.
	var paths []string
	for _, r := range c.Reasons {
		paths = append(paths, r.Path)
	}
	if len(paths) > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("with --force-conflicts the update would be %s: %s", forced, strings.Join(paths, ", ")))
	}
	var drift []plan.Drift
	for _, d := range c.Drift {
		if !slices.ContainsFunc(reasons, func(r plan.Reason) bool { return classify.Under(d.Path, r.Path) }) {
			drift = append(drift, d)
		}
	}
	c.Class, c.Blocking, c.Reasons, c.Rollout, c.Drift = plan.ClassInvalid, true, reasons, nil, drift
}

// forcedBy rewords the reasons conflicted gave a forced apply for an
// applier other than Helm, whose flags they name: takes says how it takes
// the field.
func forcedBy(c *plan.Change, takes string) {
	for i, r := range c.Reasons {
		if r.Manager != "" {
			c.Reasons[i].Message = fmt.Sprintf("owned by field manager %q: %s", r.Manager, takes)
		}
	}
}

// classified gives an update its verdict from the update u as predicted
// (derived or the server's answer, predicted; nil when the server refused
// it): its class, reasons and rollout, whether it is destructive or
// blocks, what the report shows after it, and the drift it reverts.
func (p *Planner) classified(c *plan.Change, u classify.Update, predicted, original, liveObj *unstructured.Unstructured, next *manifest.Object) {
	defer p.Stats.add(stageClassify, time.Now())
	if !u.Derived {
		markPruned(c, next.Obj, predicted)
	}
	v := p.Classifier.Classify(u)
	if v.Noop {
		c.Action = plan.ActionNoop
	}
	c.Class, c.Reasons, c.Rollout = v.Class, v.Reasons, v.Rollout
	c.Destructive = v.Class == plan.ClassRecreateRequired || v.Class == plan.ClassInvalid
	c.Blocking = v.Class == plan.ClassInvalid
	if d, _ := classify.DestructiveKind(schema.GroupKind{Group: c.ID.Group, Kind: c.ID.Kind}); d.Migrate != "" && v.Class == plan.ClassRecreateRequired {
		// Never acknowledgeable: the tool does not delete volumes.
		c.Blocking = true
		path := "spec"
		if len(c.Reasons) > 0 {
			path = c.Reasons[0].Path
		}
		c.Reasons = append([]plan.Reason{{Path: path, Message: d.Migrate, Source: plan.SourceCatalogue}}, c.Reasons...)
	}
	after := predicted
	if after == nil {
		after = u.Backfill()
	}
	c.After = p.shown(after)
	c.Drift = classify.Drift(original, liveObj, next.Obj, after)
}
