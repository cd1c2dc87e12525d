// Package restart is --restart-stale, one feature the stages call: the
// planner marks the release's stale readers restarted (Plan), the apply
// patches them once Helm's upgrade succeeded (Apply); the plan model
// (plan.Plan.Restarts) and the saved plan's pin of them (savedplan) only
// carry its answer.
package restart

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// Plan plans, when on (--restart-stale), the restart of every
// workload of the release whose running pods would keep a changed
// ConfigMap's or Secret's old value (plan.SightStale) and whose controller
// replaces its pods for a new template (classify.Restartable): its change
// becomes a rolling update of the pod template's restartedAt annotation,
// which the apply sets after Helm's upgrade, and the reader is shown as
// restarted. Readers outside the release are not the release's to
// restart, and stay stale. It drops the live objects change kept for a
// restart that is not planned (a noop's objects are not kept).
func Plan(changes []plan.Change, on bool) {
	if !on {
		return
	}
	at := map[manifest.ObjectID]*plan.Change{}
	for i := range changes {
		at[changes[i].ID] = &changes[i]
	}
	for i := range changes {
		t := &changes[i]
		for j := range t.Consumers {
			u := &t.Consumers[j]
			if u.Sees != plan.SightStale {
				continue
			}
			w := at[u.Workload]
			if why := notRestartable(u, w); why != "" {
				u.NotRestarted = why
				continue
			}
			u.Sees = plan.SightRestarted
			if what := t.ID.Kind + " " + t.ID.Name; !slices.Contains(w.RestartedFor, what) {
				w.RestartedFor = append(w.RestartedFor, what)
			}
		}
	}
	for i := range changes {
		c := &changes[i]
		switch {
		case len(c.RestartedFor) > 0:
			asRestart(c)
		case c.Action == plan.ActionNoop:
			c.Before = nil
		}
	}
}

// notRestartable says why the workload of u, a stale reader whose change
// is w (nil: none), is not restarted; "" when it can be: a workload of
// the release of a kind whose pods a new template replaces, whose
// template the plan does not change already (such a reader rolls, and is
// never stale), and whose live object the plan holds.
func notRestartable(u *plan.Consumer, w *plan.Change) string {
	switch {
	case u.Outside || w == nil:
		return "outside the release"
	case !classify.Restartable(w.ID.GroupKind()):
		return "a new template replaces no pod of a " + w.ID.Kind
	case w.Before == nil:
		return "not in the cluster"
	case w.Action != plan.ActionNoop && (w.Action != plan.ActionUpdate || w.Class != plan.ClassNone && w.Class != plan.ClassInPlace):
		return "its change is " + string(w.Class)
	}
	return ""
}

// asRestart makes c, a workload the apply restarts, a rolling update of its
// pod template's restartedAt annotation, whose value is the apply's time.
func asRestart(c *plan.Change) {
	after := c.After
	if after == nil {
		after = c.Before
	}
	after = after.DeepCopy()
	annotations, _, _ := unstructured.NestedStringMap(after.Object, "spec", "template", "metadata", "annotations")
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[plan.RestartedAtAnnotation] = plan.RestartedAtPending
	_ = unstructured.SetNestedStringMap(after.Object, annotations, "spec", "template", "metadata", "annotations")
	if c.Action == plan.ActionNoop {
		// Helm leaves it as it is; the restart is not Helm's to predict.
		c.Prediction = plan.PredictionNone
	}
	c.Action, c.Class, c.After = plan.ActionUpdate, plan.ClassRolling, after
	c.Regenerated, c.Ignored = false, false // the restart counts, whatever else changes
	c.Rollout = classify.Rollout(c.ID.GroupKind(), after.Object)
	c.Reasons = append(c.Reasons, plan.Reason{Path: plan.RestartedAtPath, Source: plan.SourceDerived, After: plan.RestartedAtPending,
		Message: "restarted for " + strings.Join(c.RestartedFor, ", ") + " (--restart-stale): the tool sets this annotation after Helm's upgrade, as kubectl rollout restart does, so that the new pods read the new value"})
}
