package planner

import (
	"context"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/panics"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
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
