// Package plan holds the domain model of an upgrade plan: what will happen to
// each object, why, and whether it is destructive. It is pure data; building a
// plan from a cluster happens in the stages before it.
package plan

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

// APIVersion versions the JSON form of a plan.
const APIVersion = "safe-upgrade/v1"

// Action is what the upgrade does to an object.
type Action string

// Actions.
const (
	ActionCreate Action = "create"
	ActionDelete Action = "delete"
	ActionUpdate Action = "update"
	ActionNoop   Action = "noop"
)

// Class says how an update reaches the object.
type Class string

// Classes of an update.
const (
	ClassNone             Class = ""
	ClassInPlace          Class = "in-place"
	ClassRolling          Class = "rolling"
	ClassRecreateRequired Class = "recreate-required"
	ClassInvalid          Class = "invalid"
)

// Source says who established a reason.
type Source string

// Sources of a reason.
const (
	SourceServer    Source = "server"    // the API server's dry-run answer
	SourceCatalogue Source = "catalogue" // our per-kind knowledge, when no dry-run could be made
	SourceHelm      Source = "helm"      // Helm's own rules (resource policy, ownership, CRDs)
)

// Reason explains a verdict with the field path it concerns.
type Reason struct {
	Path    string `json:"path"`
	Message string `json:"message"`
	Source  Source `json:"source"`
	// Before and After are the live and predicted values at Path, already
	// masked for Secrets. They feed fingerprints; they are not printed raw.
	Before string `json:"-"`
	After  string `json:"-"`
}

// Rollout describes which pods a workload update replaces and how.
type Rollout struct {
	Replicas int64  `json:"replicas"`
	Strategy string `json:"strategy"`
	// Impact is a one-line human description, e.g. "3 pods replaced one at a
	// time (maxUnavailable 25%, maxSurge 25%)".
	Impact string `json:"impact"`
}

// Drift is a field whose live value differs from the last release manifest.
type Drift struct {
	Path string `json:"path"`
	// Reverted is true when this upgrade puts the release's value back.
	Reverted bool `json:"reverted"`
}

// Change is the verdict for one object.
type Change struct {
	ID         manifest.ObjectID `json:"-"`
	APIVersion string            `json:"apiVersion"`
	Action     Action            `json:"action"`
	Class      Class             `json:"class,omitempty"`
	// Destructive changes need an acknowledgement before apply.
	Destructive  bool `json:"destructive"`
	Acknowledged bool `json:"acknowledged"`
	// AckedBy says how it was acknowledged: flag, ack-file, prompt,
	// ack-all-destructive.
	AckedBy     string `json:"ackedBy,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	// Blocking changes stop the upgrade whatever is acknowledged.
	Blocking bool     `json:"-"`
	Reasons  []Reason `json:"reasons"`
	Rollout  *Rollout `json:"rollout,omitempty"`
	Drift    []Drift  `json:"drift,omitempty"`
	Notes    []string `json:"notes,omitempty"`
	// Source is the chart template the object was rendered from (Helm's
	// "# Source:" comment, e.g. "db/templates/statefulset.yaml"); empty when
	// unknown.
	Source string `json:"-"`
	// LiveResourceVersion pins the live object the change was planned
	// against (saved plans refuse to apply when it moved).
	LiveResourceVersion string `json:"-"`
	// Before is the live object and After the predicted one, both with
	// server-managed fields removed and Secret values masked.
	Before *unstructured.Unstructured `json:"-"`
	After  *unstructured.Unstructured `json:"-"`
}

// Release identifies the release being upgraded.
type Release struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Revision is the revision the upgrade will create; CurrentRevision the
	// one deployed now (0 for an install).
	Revision        int    `json:"revision"`
	CurrentRevision int    `json:"currentRevision"`
	Chart           string `json:"chart"`
	Install         bool   `json:"install,omitempty"`
}

// Hook is a Helm hook of the new release; hooks run around the upgrade and are
// not diffed like release objects.
type Hook struct {
	Kind   string   `json:"kind"`
	Name   string   `json:"name"`
	Events []string `json:"events"`
}

// Plan is the full prediction for one upgrade.
type Plan struct {
	Release       Release  `json:"release"`
	ServerVersion string   `json:"serverVersion,omitempty"`
	Offline       bool     `json:"offline,omitempty"`
	Changes       []Change `json:"changes"`
	Hooks         []Hook   `json:"hooks,omitempty"`
	// Notes are plan-wide remarks (CRDs from crds/ not upgraded, checks
	// skipped, ...).
	Notes []string `json:"notes,omitempty"`
}

// Summary counts changes by verdict.
type Summary struct {
	Create      int `json:"create"`
	Delete      int `json:"delete"`
	Noop        int `json:"noop"`
	InPlace     int `json:"inPlace"`
	Rolling     int `json:"rolling"`
	Recreate    int `json:"recreate"`
	Invalid     int `json:"invalid"`
	Destructive int `json:"destructive"`
	Blocked     int `json:"blocked"`
}

// Summary counts the plan's changes. Blocked counts destructive changes that
// are not acknowledged.
func (p *Plan) Summary() Summary {
	var s Summary
	for _, c := range p.Changes {
		switch c.Action {
		case ActionCreate:
			s.Create++
		case ActionDelete:
			s.Delete++
		case ActionNoop:
			s.Noop++
		case ActionUpdate:
			switch c.Class {
			case ClassInPlace:
				s.InPlace++
			case ClassRolling:
				s.Rolling++
			case ClassRecreateRequired:
				s.Recreate++
			case ClassInvalid:
				s.Invalid++
			}
		}
		if c.Destructive {
			s.Destructive++
			if !c.Acknowledged || c.Blocking {
				s.Blocked++
			}
		}
	}
	return s
}

// HasChanges reports whether anything would change.
func (p *Plan) HasChanges() bool {
	for _, c := range p.Changes {
		if c.Action != ActionNoop {
			return true
		}
	}
	return false
}
