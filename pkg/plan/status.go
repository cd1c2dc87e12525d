package plan

import (
	"time"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

// Status is what `status` found: for each release asked, its live objects
// against its stored manifest, and its health. Every text in it came
// through the run's sanitiser (masked, escaped, bounded).
type Status struct {
	ServerVersion string
	Releases      []ReleaseStatus
}

// ReleaseStatus is one release's status.
type ReleaseStatus struct {
	Name, Namespace string
	// Revision is the stored revision the live objects are compared with
	// (the one the next upgrade starts from); Last is the newest revision
	// and HelmStatus its status (deployed, failed, pending-upgrade, …).
	Revision, Last int
	HelmStatus     string
	Chart          string
	AppVersion     string
	// ApplyMethod is how the next upgrade applies (csa, ssa).
	ApplyMethod string
	Updated     time.Time
	Objects     []ObjectStatus
	// Health are the release's problems besides drift: a Helm status
	// other than deployed, an unfinished recreate journal, a held Lease,
	// workloads not ready.
	Health []string
	// Notes are remarks that are no problem (kinds not listed, …).
	Notes []string
	// Unreadable: a stored record of the release cannot be read (over the
	// bound, not JSON, a wrong type; Health says which and why), so what is
	// deployed is not known: never in sync.
	Unreadable bool
}

// ObjectState is what became of one object of a release.
type ObjectState string

// Object states.
const (
	StateInSync  ObjectState = "in-sync"
	StateDrifted ObjectState = "drifted"
	StateMissing ObjectState = "missing"
	// StateExtra: carries the release's ownership metadata but is not in
	// its manifest (no upgrade touches it).
	StateExtra ObjectState = "extra"
)

// ObjectStatus is one object's status and what the next upgrade of the same
// chart and values does to it.
type ObjectStatus struct {
	ID         manifest.ObjectID
	APIVersion string
	State      ObjectState
	// Drift is each field the stored manifest sets whose live value
	// differs.
	Drift []FieldDrift
	// Next is the next upgrade's verdict on the object ("" for an object in
	// sync or extra): in-place, rolling, recreate-required (reverting an
	// immutable field), invalid, create (missing), noop (a drift the upgrade
	// leaves, such as an ignored field).
	Next string
	// Reasons are the next upgrade's reasons, as a plan has them.
	Reasons []Reason
	Rollout *Rollout
	Notes   []string
}

// FieldDrift is one drifted field: the stored value, the live one (both
// masked for Secrets), who wrote the live one, and whether the next upgrade
// puts the stored value back.
type FieldDrift struct {
	Path         string
	Stored, Live string
	// Manager is the field manager that owns the live value (from
	// metadata.managedFields), Operation its operation (Update, Apply) and
	// Time when it last wrote the object; empty when none but Helm does.
	Manager   string
	Operation string
	Time      time.Time
	Reverted  bool
}

// StatusSummary counts objects by state.
type StatusSummary struct {
	InSync, Drifted, Missing, Extra int
}

// Summary counts r's objects by state.
func (r *ReleaseStatus) Summary() StatusSummary {
	var s StatusSummary
	for _, o := range r.Objects {
		switch o.State {
		case StateInSync:
			s.InSync++
		case StateDrifted:
			s.Drifted++
		case StateMissing:
			s.Missing++
		case StateExtra:
			s.Extra++
		}
	}
	return s
}

// Summary counts the objects of every release by state.
func (s *Status) Summary() StatusSummary {
	var out StatusSummary
	for i := range s.Releases {
		r := s.Releases[i].Summary()
		out.InSync += r.InSync
		out.Drifted += r.Drifted
		out.Missing += r.Missing
		out.Extra += r.Extra
	}
	return out
}

// OutOfSync reports whether an object drifted or is missing, or a
// release's record cannot be read (--detailed-exitcode's 3).
func (s *Status) OutOfSync() bool {
	sum := s.Summary()
	return sum.Drifted > 0 || sum.Missing > 0 || s.Unreadable() > 0
}

// Unreadable counts the releases with a record that cannot be read.
func (s *Status) Unreadable() int {
	n := 0
	for i := range s.Releases {
		if s.Releases[i].Unreadable {
			n++
		}
	}
	return n
}
