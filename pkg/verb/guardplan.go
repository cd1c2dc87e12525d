package verb

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/guard"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// guardRefuses starts what a plan says of a delete the guard in the
// cluster refuses.
const guardRefuses = "refused by the guard unless acknowledged"

// gateGuardedDeletes makes every delete of p that the guard in the cluster
// would refuse (guard.Guards; orphan as for Helm's deletes of this run) a
// destructive change to acknowledge, when the plan finds the guard in
// force: unacknowledged, the gate blocks the run before the guard is ever
// reached, and acknowledged, the apply writes the guard's acknowledgement
// on exactly that object before Helm deletes it (ackGuardedDeletes).
// Without it, a delete the gate lets pass (an uninstall's StatefulSet,
// whose claims stay) fails at the guard half-way through Helm's run. The
// guard is read (two GETs) only when the plan deletes a kind it guards.
func (c *Config) gateGuardedDeletes(ctx context.Context, p *plan.Plan, orphan bool) error {
	guarded := func(ch plan.Change) bool {
		return ch.Action == plan.ActionDelete && ch.Before != nil && !ch.Blocking &&
			guard.Guards(schema.GroupKind{Group: ch.ID.Group, Kind: ch.ID.Kind}, ch.Before, orphan)
	}
	if !slices.ContainsFunc(p.Changes, guarded) {
		return nil
	}
	inForce, err := guard.InForce(ctx, c.Cluster)
	switch {
	case apierrors.IsForbidden(err):
		p.Notes = append(p.Notes, c.Sanitizer.Text("whether the safe-upgrade guard is installed could not be read ("+err.Error()+"): if it is, the deletes it refuses that this plan does not ask to acknowledge fail at the guard during Helm's run", redact.MessageLimit))
		return nil
	case err != nil:
		return err
	case !inForce:
		return nil
	}
	for i := range p.Changes {
		ch := &p.Changes[i]
		if !guarded(*ch) {
			continue
		}
		if ch.Destructive {
			ch.Notes = append(ch.Notes, guardRefuses+": acknowledged, the tool writes the guard's acknowledgement ("+guard.AckAnnotation+") on it before Helm deletes it")
			continue
		}
		gk := schema.GroupKind{Group: ch.ID.Group, Kind: ch.ID.Kind}
		ch.Destructive = true
		ch.Reasons = append(ch.Reasons, plan.Reason{Source: plan.SourceCatalogue,
			Message: guardRefuses + ": the safe-upgrade guard installed in the cluster refuses Helm's delete (" + guard.Destroys(gk) +
				"); acknowledged, the tool writes the guard's acknowledgement (" + guard.AckAnnotation + ") on it before Helm deletes it"})
		ch.Fingerprint = plan.Fingerprint(*ch)
	}
	return nil
}
