package planner

import (
	"context"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/panics"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// objects is the plan's pass over every object: each evaluated (read live,
// predicted, classified) concurrently, then marked by the second render,
// the ignore rules and the acknowledgement rule; and what each workload
// reads of ConfigMaps and Secrets. ids are sorted, so changes come out in
// report order.
func (p *Planner) objects(ctx context.Context, in Input, ids []manifest.ObjectID, prev, next *manifest.Set, crdKinds map[schema.GroupKind]bool, regen map[manifest.ObjectID][]string, san *redact.Sanitizer) (changes []plan.Change, reads [][]classify.ConfigRef, err error) {
	var work []evaluation
	// An applier's object may apply server-side by its own override
	// (Applier.Release): the live objects keep their managed fields.
	p.Stats.timed(stageLive, func() { work = p.evaluations(ctx, ids, prev, next, in.Release.ServerSide() || in.Applier != nil, san) })
	// ids are sorted, so changes come out in report order.
	changes = make([]plan.Change, len(ids))
	// What each workload of the new render reads of ConfigMaps and Secrets,
	// taken while its object is decoded (configConsumers).
	reads = make([][]classify.ConfigRef, len(ids))
	// err becomes the first failure of an object.
	p.Stats.timed(stageObjects, func() {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(max(p.Concurrency, 1))
		for i, id := range ids {
			g.Go(func() (err error) {
				defer panics.Catch(&err) // a panic here would exit 2, the gate's code
				e := work[i]
				work[i] = evaluation{} // its objects are garbage once it is evaluated
				changes[i], err = p.change(gctx, in, e, crdKinds, san)
				if e.next != nil && e.next.Obj != nil {
					reads[i] = podReads(id.Group, id.Kind, e.next.Obj.Object)
				}
				markRegenerated(&changes[i], regen[id])
				markIgnored(&changes[i], in.Ignore)
				if e.next != nil {
					markSelfAcknowledged(&changes[i], e.next.Obj)
				}
				return err
			})
		}
		err = g.Wait()
	})
	if err != nil {
		return nil, nil, san.Error(err)
	}
	return changes, reads, nil
}

// evaluation is what one change is evaluated from: the object's
// last-release and new forms (either may be nil) and, when a LIST read it
// already, its live state, still encoded.
type evaluation struct {
	prev, next *manifest.Object
	prefetched *live.State
}

// evaluations pairs each of ids with its forms and prefetched live state.
// Nothing else holds them once the sets are dropped, so each object's
// parsed and live forms become garbage as soon as its change is evaluated:
// memory grows with the changes, not with the release. A live object is
// decoded by its evaluation (change); those that may hold a Secret value
// are decoded once before, for san: a server's answer about one object (a
// warning is printed as it comes) may quote another.
func (p *Planner) evaluations(ctx context.Context, ids []manifest.ObjectID, prev, next *manifest.Set, ssa bool, san *redact.Sanitizer) []evaluation {
	work := make([]evaluation, len(ids))
	objs := make([]*manifest.Object, 0, len(ids))
	for i, id := range ids {
		work[i] = evaluation{prev: prev.Get(id), next: next.Get(id)}
		if o := work[i].next; o != nil {
			objs = append(objs, o)
		} else {
			objs = append(objs, work[i].prev)
		}
	}
	prefetched := p.Cluster.Objects.Prefetch(redact.WithReadsSanitized(ctx), objs, leanLive(prev, ssa))
	for i, id := range ids {
		if st, ok := prefetched[id]; ok {
			work[i].prefetched = &st
			if apiVersion, kind, data, encoded := st.Encoded(); encoded && redact.MayHoldSecrets(apiVersion, kind, data) {
				san.Add(st.Decode().Obj)
			}
		}
	}
	return work
}

// leanLive drops from the live objects what a client-side (Helm 3) plan
// never reads: metadata.managedFields, server-side apply's field ownership,
// often more than half of an object. A Helm 4 server-side apply reads them
// (conflicts, owners of drift), and so does an object without a last-release
// form, which Helm diffs against the live object itself.
func leanLive(prev *manifest.Set, ssa bool) live.Lean {
	if ssa {
		return nil
	}
	return func(o *manifest.Object) bool { return prev.Get(o.ID) != nil }
}
