package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// DroppedByReplace is the message of a field an accepted --force PUT
// removes: the live object has it, the render does not set it, and the
// server does not fill it in again on update.
const DroppedByReplace = "not in the new render: Helm's --force PUT removes it (set by another field manager, or by the server when the object was created)"

// replace plans an update as Helm makes it with --force (Helm 4:
// --force-replace) and a client-side apply: helm's updateResource replaces
// every object of the new manifest that exists, changed or not, with a PUT
// of the rendered object (Helm's metadata added, the live resourceVersion
// set; nothing deleted first). The same PUT goes to the server as a dry-run
// and its answer decides:
//   - accepted: the change is what the PUT stores compared with live, so
//     the fields the PUT drops (the render does not set them, the server
//     does not fill them in again) are changes too, and an unchanged object
//     that PUTs cleanly is a noop;
//   - refused: Helm's upgrade fails on it, after the objects before it were
//     replaced, so the change is invalid and blocks, with the server's
//     causes. Unless the patch is refused too (a recreate-required change):
//     acknowledged, the object is then deleted first and Helm creates it,
//     no PUT; the patch's verdict stands.
//
// Without a server answer (offline, RBAC forbids the PUT) the verdict is
// the patch's, with a note saying so.
func (p *Planner) replace(ctx context.Context, c *plan.Change, in Input, prev, next *manifest.Object, liveObj *unstructured.Unstructured) error {
	start := time.Now()
	p.Stats.asked("--force: Helm replaces every object")
	replaced, err := p.sendReplace(ctx, next, liveObj.GetResourceVersion())
	p.Stats.add(stagePredict, start)
	var notServed *live.KindNotServedError
	switch {
	case err == nil:
		p.replaceAccepted(c, prev, next, liveObj, replaced)
		return nil
	case errors.As(err, &notServed):
		return fmt.Errorf("%s: %w", c.ID, err)
	case !replaceRefused(err):
		if perr := p.patched(ctx, c, in, prev, next, liveObj); perr != nil {
			return perr
		}
		why := "no server to ask"
		if !errors.Is(err, live.ErrNoServer) {
			why = sanitize(err, next.Obj)
		}
		c.Notes = append(c.Notes, "--force: Helm replaces this object with PUT, which was not checked ("+why+"); the verdict is the patch's")
		return nil
	}
	if perr := p.patched(ctx, c, in, prev, next, liveObj); perr != nil {
		return perr
	}
	switch c.Class {
	case plan.ClassRecreateRequired:
		c.Notes = append(c.Notes, "--force: Helm's PUT of it is refused too; acknowledged, it is deleted first and Helm creates it (no PUT)")
		return nil
	case plan.ClassInvalid:
		return nil
	}
	without := c.Verdict()
	if c.Before == nil { // a noop's objects were not kept
		c.Before = p.shown(liveObj)
		c.After = c.Before
	}
	c.Action, c.Class, c.Rollout, c.Prediction = plan.ActionUpdate, plan.ClassInvalid, nil, plan.PredictionServer
	c.Destructive, c.Blocking = true, true
	c.Reasons = classify.ReplaceRefused(err, redact.Sensitive(liveObj)) // fail closed
	c.Notes = append(c.Notes, fmt.Sprintf("without --force Helm patches it instead (%s)", without))
	return nil
}

// replaceAccepted classifies the object an accepted --force PUT stores.
func (p *Planner) replaceAccepted(c *plan.Change, prev, next *manifest.Object, liveObj, replaced *unstructured.Unstructured) {
	defer p.Stats.add(stageClassify, time.Now())
	original := objectOf(prev)
	stored := p.Masker.Object(replaced)
	u := classify.Update{GroupKind: schema.GroupKind{Group: c.ID.Group, Kind: c.ID.Kind},
		Live: p.Masker.Object(liveObj), Secret: redact.Sensitive(liveObj),
		Original: p.Masker.Object(original), Target: p.Masker.Object(next.Obj),
		Predicted: stored, Local: stored}
	c.Prediction = plan.PredictionServer
	markPruned(c, next.Obj, replaced)
	v := p.Classifier.Classify(u)
	if v.Noop {
		c.Action = plan.ActionNoop
	}
	c.Class, c.Reasons, c.Rollout = v.Class, markDropped(v.Reasons, u.Target, stored), v.Rollout
	c.Before, c.After = p.shown(liveObj), p.shown(replaced)
	c.Drift = classify.Drift(original, liveObj, next.Obj, replaced)
}

// markDropped rewords the reasons at fields the PUT removes and the render
// does not set (DroppedByReplace): a PUT keeps nothing of live but what the
// server fills in again.
func markDropped(reasons []plan.Reason, target, stored *unstructured.Unstructured) []plan.Reason {
	want, got := classify.Comparable(target).Object, classify.Comparable(stored).Object
	for i, r := range reasons {
		if r.Path != "" && r.Path != "…" && classify.Lookup(got, r.Path) == nil && classify.Lookup(want, r.Path) == nil {
			reasons[i].Message = DroppedByReplace
		}
	}
	return reasons
}

// sendReplace sends Helm's --force PUT as a dry-run, and counts it.
func (p *Planner) sendReplace(ctx context.Context, obj *manifest.Object, resourceVersion string) (*unstructured.Unstructured, error) {
	p.Stats.dryRun()
	return p.Cluster.DryRuns.DryRunReplace(ctx, obj, resourceVersion)
}

// replaceRefused reports whether the server refused the PUT itself, as
// opposed to being unable to answer it (no server, RBAC forbids updates,
// the object moved since it was read).
func replaceRefused(err error) bool {
	if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "cannot update resource") {
		return false
	}
	return rejectsObject(err)
}
