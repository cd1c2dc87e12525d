package classify

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// ObjectStatus is one change of a status plan (the next upgrade of a
// release's stored manifest against the cluster) as the object's status:
// missing, in sync, or drifted with each drifted field detailed. compared
// reads the stored and live objects the fields are compared in (either
// nil: none); it is called only for a drifted object, since reading the
// live one may take a GET. Secret values are masked with masker and text
// from the cluster sanitised.
func ObjectStatus(ch *plan.Change, compared func() (stored, live *unstructured.Unstructured), masker *redact.Masker, san *redact.Sanitizer) plan.ObjectStatus {
	s := plan.ObjectStatus{ID: ch.ID, APIVersion: ch.APIVersion, State: plan.StateInSync, Notes: ch.Notes}
	switch {
	case ch.Action == plan.ActionCreate:
		s.State, s.Next, s.Reasons = plan.StateMissing, ch.Verdict(), ch.Reasons
		return s
	case ch.Action == plan.ActionNoop && len(ch.Drift) == 0:
		return s
	}
	s.State, s.Next, s.Reasons, s.Rollout = plan.StateDrifted, ch.Verdict(), ch.Reasons, ch.Rollout
	if ch.Ignored {
		s.Next = string(plan.ActionNoop)
	}
	stored, liveObj := compared()
	if stored != nil {
		// As the drift was found: decoded (a Secret's stringData folded
		// into data), not defaulted.
		stored = predict.Decoded(stored)
	}
	s.Drift = fieldDrift(conflictDrift(ch), stored, liveObj, masker, san)
	return s
}

// conflictDrift is ch's drift with the fields of its server-side apply
// conflicts (another manager took a field the chart sets: Helm 4's upgrade
// fails there, so the planner lists them as reasons, not as drift it
// reverts).
func conflictDrift(ch *plan.Change) []plan.Drift {
	drift := ch.Drift
	for _, r := range ch.Reasons {
		if r.Manager != "" && r.Path != "" && !slices.ContainsFunc(drift, func(d plan.Drift) bool { return d.Path == r.Path }) {
			drift = append(drift, plan.Drift{Path: r.Path, Manager: r.Manager})
		}
	}
	return drift
}

// fieldDrift details each drifted field: its stored and live values (Secret
// values masked) and, from the live object's managedFields, the manager
// that owns the live value, its operation and when it wrote.
func fieldDrift(drift []plan.Drift, storedObj, liveObj *unstructured.Unstructured, masker *redact.Masker, san *redact.Sanitizer) []plan.FieldDrift {
	maskedStored, maskedLive := masker.Object(storedObj), masker.Object(liveObj)
	owners := Owners(liveObj, predict.FieldManager)
	out := make([]plan.FieldDrift, 0, len(drift))
	for _, d := range drift {
		fd := plan.FieldDrift{Path: d.Path, Reverted: d.Reverted,
			Stored: san.Text(ValueAt(maskedStored, d.Path), redact.MessageLimit),
			Live:   san.Text(ValueAt(maskedLive, d.Path), redact.MessageLimit)}
		if managers := owners.Owner(d.Path); managers != "" {
			fd.Manager = san.Text(managers, redact.NameLimit)
			first, _, _ := strings.Cut(managers, ", ")
			fd.Operation, fd.Time = lastWrite(liveObj, first)
		}
		out = append(out, fd)
	}
	return out
}

// lastWrite is the operation and time of manager's newest managedFields
// entry in obj.
func lastWrite(obj *unstructured.Unstructured, manager string) (string, time.Time) {
	var op string
	var at time.Time
	for _, e := range obj.GetManagedFields() {
		if e.Manager == manager && e.Time != nil && !e.Time.Time.Before(at) {
			op, at = string(e.Operation), e.Time.Time.UTC()
		}
	}
	return op, at
}
