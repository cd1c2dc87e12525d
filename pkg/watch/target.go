package watch

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/jsonvalue"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// target is one object followed.
type target struct {
	change *plan.Change
	gvk    schema.GroupVersionKind
	// group is the LIST+WATCH the object is followed by; its gvr is empty
	// when the kind is not served (last says why).
	group  groupKey
	expect expectation
	// podsBefore are the pods its selector (as it was live) matched before
	// the apply, by name.
	podsBefore map[string]types.UID
	// unreadyBefore is what kept the workload from being ready before
	// the upgrade ("" when it was, or nothing told): a rollout that does
	// not become ready is not only the upgrade's doing.
	unreadyBefore string
	// before is the object as it was live before the apply (nil: it was
	// not there, or not read); applied becomes true once the watch saw
	// Helm's apply reach it (see appliedIn).
	before  *baseline
	applied bool
	// last is its status at the last evaluation; shown is true once it
	// has a progress line; trouble is the last status that said something
	// was wrong (see Alongside).
	last    status
	shown   bool
	trouble *status
}

// baseline is what tells an object Helm has not written yet from one it
// has: its UID, generation and resource version before the apply.
type baseline struct {
	uid             types.UID
	generation      int64
	resourceVersion string
}

func (t *target) workload() bool { return Workload(t.gvk.GroupKind()) }

// Workload reports whether kind is a workload whose readiness its pods
// say: the watch follows their pods, and status reads why one is not ready
// from them.
func Workload(kind schema.GroupKind) bool {
	switch kind {
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}, schema.GroupKind{Group: "apps", Kind: "StatefulSet"},
		schema.GroupKind{Group: "apps", Kind: "DaemonSet"}, schema.GroupKind{Group: "apps", Kind: "ReplicaSet"},
		schema.GroupKind{Group: "batch", Kind: "Job"}:
		return true
	}
	return false
}

func baselineOf(o *unstructured.Unstructured) *baseline {
	if o == nil {
		return nil
	}
	return &baseline{uid: o.GetUID(), generation: o.GetGeneration(), resourceVersion: o.GetResourceVersion()}
}

// appliedIn reports whether obj, t's live object, is past its baseline:
// another object (recreated), a later generation, or, for a change that
// leaves the spec as it is (no generation moves), any later write.
func (t *target) appliedIn(obj *unstructured.Unstructured) bool {
	b := t.before
	switch {
	case b == nil || obj == nil:
		return true // created, or deleted to be created again: Helm is at it
	case obj.GetUID() != b.uid || obj.GetGeneration() > b.generation:
		return true
	case b.generation > 0 && specChanged(t.change):
		// A controller writing the status changes the resource version,
		// not the generation.
		return false
	}
	return obj.GetResourceVersion() != b.resourceVersion
}

// baselines records, from the first LIST of group k (Alongside starts
// before Helm's apply), what its targets were just before the apply: the
// plan's live object may be older, or lack a generation (a lean plan). An
// object already past the plan's is applied.
func (w *Watcher) baselines(k groupKey, list map[string]*unstructured.Unstructured) {
	for _, t := range w.targets {
		obj := list[t.change.ID.Name]
		if t.group != k || t.applied || obj == nil {
			continue
		}
		if b := t.before; b != nil && (b.uid != "" && obj.GetUID() != b.uid || b.generation > 0 && obj.GetGeneration() > b.generation) {
			t.applied = true
			continue
		}
		t.before = baselineOf(obj)
	}
}

func (b *baseline) String() string {
	if b.generation > 0 {
		return fmt.Sprintf("generation %d, as before the upgrade", b.generation)
	}
	return "as before the upgrade"
}

// specChanged reports whether a change's predicted spec differs from the
// live one (a change of metadata alone moves no generation).
func specChanged(ch *plan.Change) bool {
	return fieldChanged(ch, "spec")
}

// templateChanged reports whether a change's predicted pod template differs
// from the live one.
func templateChanged(ch *plan.Change) bool {
	return fieldChanged(ch, "spec", "template")
}

// fieldChanged reports whether the field at path differs between a
// change's live and predicted object (true when either is missing).
func fieldChanged(ch *plan.Change, path ...string) bool {
	if ch.Before == nil || ch.After == nil {
		return true
	}
	before, _, _ := unstructured.NestedFieldNoCopy(ch.Before.Object, path...)
	after, _, _ := unstructured.NestedFieldNoCopy(ch.After.Object, path...)
	return !jsonvalue.Equal(before, after)
}
