package planner

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// change evaluates one object.
func (p *Planner) change(ctx context.Context, in Input, e evaluation, crdKinds map[schema.GroupKind]bool, san *redact.Sanitizer) (plan.Change, error) {
	prev, next := e.prev, e.next
	if err := manifest.LoadPair(prev, next); err != nil {
		return plan.Change{}, err
	}
	obj := next
	if obj == nil {
		obj = prev
	} else {
		// Here rather than for the whole render at once: a metadata map
		// more for every object, held until its evaluation otherwise.
		if in.Applier != nil {
			if in.Applier.Release != nil {
				in.Release = in.Applier.Release(in.Release, next.Obj)
			}
			in.Applier.Mark(next.Obj, next.ID)
		} else {
			addHelmMetadata(next.Obj, in.Release.Name, in.Release.Namespace)
		}
	}
	c := plan.Change{ID: obj.ID, APIVersion: obj.GVK.GroupVersion().String(), Source: obj.Source}
	// The unknown-field warnings of this object's dry-runs (unknownFields).
	ctx, warned := predict.WithWarnings(ctx)
	var state live.State
	if e.prefetched != nil {
		state = e.prefetched.Decode() // its values are in san already (evaluations)
	} else {
		state = p.Cluster.Objects.Get(redact.WithReadsSanitized(ctx), obj, prev)
		san.Add(state.Obj) // values only the cluster holds
	}
	if state.Err != nil {
		return c, state.Err
	}
	liveObj := state.Obj
	if liveObj != nil {
		c.LiveResourceVersion = liveObj.GetResourceVersion()
	}
	switch {
	case next == nil:
		if err := p.deletion(ctx, in.Release.Op(), in.Applier, &c, liveObj); err != nil {
			return c, err
		}
	case liveObj == nil:
		p.creation(ctx, &c, in.Release, next, crdKinds)
	default:
		if err := p.update(ctx, &c, in, prev, next, liveObj); err != nil {
			return c, err
		}
	}
	if next != nil {
		p.unknownFields(ctx, &c, in.Release, next, liveObj != nil, warned)
	}
	if c.Action == plan.ActionNoop {
		// Nothing shows or saves a noop's objects (no diff, no state to pin):
		// keeping them would make memory grow with the release.
		c.Before, c.After = nil, nil
		if in.RestartStale && liveObj != nil && classify.Restartable(obj.GVK.GroupKind()) {
			c.Before = p.shown(liveObj) // what a restart would change (restartStale)
		}
	}
	return c, nil
}

// removal says why an object of the last release goes, per operation.
func removal(op plan.Operation) string {
	switch op {
	case plan.OperationRollback:
		return "not in the revision rolled back to"
	case plan.OperationUninstall:
		return "uninstalled with the release"
	}
	return "removed from the chart"
}

func (p *Planner) deletion(ctx context.Context, op plan.Operation, applier *Applier, c *plan.Change, liveObj *unstructured.Unstructured) error {
	gone := removal(op)
	if liveObj == nil {
		c.Action = plan.ActionNoop
		c.Notes = append(c.Notes, gone+"; already absent from the cluster")
		return nil
	}
	c.Before = p.shown(liveObj)
	if manifest.Kept(liveObj) {
		c.Action = plan.ActionNoop
		c.Reasons = []plan.Reason{{Path: KeptPath, Source: plan.SourceHelm,
			Message: gone + " but kept (helm.sh/resource-policy: keep): Helm leaves it in the cluster, no longer managed by the release"}}
		return nil
	}
	if applier != nil {
		if why := applier.Kept(liveObj); why != "" {
			c.Action = plan.ActionNoop
			c.Reasons = []plan.Reason{{Message: why, Source: plan.SourceHelm}}
			return nil
		}
	}
	c.Action = plan.ActionDelete
	gk := schema.GroupKind{Group: c.ID.Group, Kind: c.ID.Kind}
	msg := gone + ": Helm deletes it"
	if applier != nil {
		msg = applier.Deletes
	}
	d, destructive := classify.DestructiveKind(gk)
	if destructive && applier != nil {
		msg += "; " + d.Deleted
	} else if destructive {
		msg += " (no helm.sh/resource-policy: keep); " + d.Deleted
	}
	c.Destructive = destructive
	c.Reasons = []plan.Reason{{Message: msg, Source: plan.SourceHelm}}
	more, err := p.retention(ctx, d, c.ID, liveObj)
	c.Reasons = append(c.Reasons, more...)
	if op == plan.OperationUninstall {
		// Nothing of the release comes back but by a re-install: what
		// blocks is the data it would not bring back, a StatefulSet's
		// claims among it when its retention policy deletes them.
		c.Destructive = destructive && d.DataLoss || slices.ContainsFunc(more, func(r plan.Reason) bool { return r.Path == claimRetentionPath })
		c.Class = plan.ClassRecreatable
		if c.Destructive {
			c.Class = plan.ClassDataLoss
		}
	}
	return err
}

func (p *Planner) creation(ctx context.Context, c *plan.Change, rel plan.Release, next *manifest.Object, crdKinds map[schema.GroupKind]bool) {
	c.Action = plan.ActionCreate
	var created *unstructured.Unstructured
	var err error
	if rel.ServerSide() {
		// Helm 4 creates with the same server-side apply it updates with.
		created, err = p.sendApply(ctx, next, rel.ForceConflicts)
	} else {
		created, err = p.sendCreate(ctx, next)
	}
	var notServed *live.KindNotServedError
	switch {
	case errors.Is(err, live.ErrNoServer):
		c.After = p.shown(next.Obj)
		// What the catalogue knows the server's validation rejects.
		if reasons := classify.Rejected(next.GVK.GroupKind(), next.Obj); len(reasons) > 0 {
			c.Class, c.Destructive, c.Blocking, c.Reasons = plan.ClassInvalid, true, true, reasons
		}
		return
	case errors.As(err, &notServed):
		c.After = p.shown(next.Obj)
		if meta.IsNoMatchError(err) && crdKinds[next.GVK.GroupKind()] {
			c.Notes = append(c.Notes, "not validated by the server: its CustomResourceDefinition is created by this release")
			return
		}
		// Helm's upgrade fails on a kind the cluster does not serve (a
		// removed API version, a missing CRD) before changing anything.
		c.Class = plan.ClassInvalid
		c.Destructive, c.Blocking = true, true
		c.Reasons = []plan.Reason{{Path: "apiVersion", Message: "the cluster does not serve this kind: " + err.Error(), Source: plan.SourceServer}}
		return
	case err != nil:
		if rejectsObject(err) {
			c.Prediction = plan.PredictionServer
			c.Class = plan.ClassInvalid
			c.Destructive, c.Blocking = true, true
			c.Reasons = []plan.Reason{{Message: "the server rejects the new object: " + sanitize(err, next.Obj), Source: plan.SourceServer}}
		} else {
			c.Notes = append(c.Notes, "not validated by the server: "+sanitize(err, next.Obj))
		}
		created = next.Obj
	default:
		c.Prediction = plan.PredictionServer
		markPruned(c, next.Obj, created)
	}
	c.After = p.shown(created)
}

func (p *Planner) update(ctx context.Context, c *plan.Change, in Input, prev, next *manifest.Object, liveObj *unstructured.Unstructured) error {
	c.Action = plan.ActionUpdate
	rel := in.Release
	if prev == nil {
		owner := liveObj.GetAnnotations()[manifest.ReleaseNameAnnotation]
		owned := owner == rel.Name && liveObj.GetAnnotations()[manifest.ReleaseNamespaceAnnotation] == rel.Namespace
		if in.Applier != nil {
			c.Notes = append(c.Notes, in.Applier.Adopted)
		} else if !owned && in.TakeOwnership {
			c.Notes = append(c.Notes, fmt.Sprintf("exists in the cluster without this release's ownership (owner %q): --take-ownership adopts it into release %s/%s", owner, rel.Namespace, rel.Name))
		} else if !owned {
			c.Class = plan.ClassInvalid
			c.Destructive, c.Blocking = true, true
			c.Reasons = []plan.Reason{{Path: "metadata.annotations[meta.helm.sh/release-name]", Source: plan.SourceHelm,
				Message: fmt.Sprintf("exists in the cluster but is not owned by release %s/%s (owner %q): Helm refuses to adopt it", rel.Namespace, rel.Name, owner)}}
			c.Before = p.shown(liveObj)
			return nil
		}
	}
	if rel.ForceReplace && !rel.ServerSide() {
		return p.replace(ctx, c, in, prev, next, liveObj)
	}
	return p.patched(ctx, c, in, prev, next, liveObj)
}
