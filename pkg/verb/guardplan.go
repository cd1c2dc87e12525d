package verb

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
// whose claims stay) fails at the guard half-way through Helm's run. An
// update turning a volume's reclaim policy to Delete, which the guard
// refuses too, blocks until the volume is acknowledged by hand
// (guardedReclaim). The guard is read (two GETs) only when the plan holds
// such a change.
func (c *Config) gateGuardedDeletes(ctx context.Context, p *plan.Plan, orphan bool) error {
	guarded := func(ch plan.Change) bool {
		return ch.Action == plan.ActionDelete && ch.Before != nil && !ch.Blocking &&
			guard.Guards(schema.GroupKind{Group: ch.ID.Group, Kind: ch.ID.Kind}, ch.Before, orphan)
	}
	if !slices.ContainsFunc(p.Changes, guarded) && !slices.ContainsFunc(p.Changes, guardedReclaim) {
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
		if guardedReclaim(*ch) {
			if acked, err := c.volumeAcknowledged(ctx, ch.ID.Name); err != nil {
				return err
			} else if acked {
				continue
			}
			// The tool acknowledges deletes it hands to Helm, not
			// updates: an acknowledgement left on the volume after Helm's
			// update would acknowledge its deletion too.
			ch.Destructive, ch.Blocking = true, true
			ch.Reasons = append([]plan.Reason{{Path: "spec.persistentVolumeReclaimPolicy", Source: plan.SourceCatalogue,
				Message: guardRefuses + ": the safe-upgrade guard installed in the cluster refuses Helm's change of this volume's reclaim policy to Delete (its data would go with its claim); " +
					"if that is intended, acknowledge the volume by hand (kubectl annotate persistentvolumes " + ch.ID.Name + " " + guard.AckAnnotation + "=<its UID>, the command the guard's refusal prints), then plan again"}}, ch.Reasons...)
			ch.Fingerprint = plan.Fingerprint(*ch)
			continue
		}
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

// guardedReclaim: an update of a PersistentVolume whose reclaim policy
// goes to Delete, on a volume not acknowledged already: the guard refuses
// Helm's write of it.
func guardedReclaim(ch plan.Change) bool {
	if ch.Action != plan.ActionUpdate || ch.ID.Group != "" || ch.ID.Kind != "PersistentVolume" || ch.Before == nil || ch.After == nil {
		return false
	}
	before, _, _ := unstructured.NestedString(ch.Before.Object, "spec", "persistentVolumeReclaimPolicy")
	after, _, _ := unstructured.NestedString(ch.After.Object, "spec", "persistentVolumeReclaimPolicy")
	return before != "Delete" && after == "Delete"
}

// volumeAcknowledged reads whether PersistentVolume name carries the
// guard's acknowledgement (its own UID), by which the guard admits the
// change of its reclaim policy. The plan's objects hold no UID.
func (c *Config) volumeAcknowledged(ctx context.Context, name string) (bool, error) {
	ri, _, err := c.Cluster.Resource(schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolume"}, "")
	if err != nil {
		return false, err
	}
	obj, err := ri.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("PersistentVolume %s: reading whether the guard's acknowledgement is on it: %w", name, err)
	}
	return obj.GetAnnotations()[guard.AckAnnotation] == string(obj.GetUID()), nil
}
