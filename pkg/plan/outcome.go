package plan

import (
	"time"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

// Outcome is what the watch after an apply observed (pkg/watch): for each
// object the plan created or changed, whether it became current or failed,
// and what happened to its pods and claims against what the plan predicted.
type Outcome struct {
	Objects []ObjectOutcome
	// AsPredicted and Differ count Objects by ObjectOutcome.AsPredicted.
	AsPredicted, Differ int
	// Failed counts the objects that failed or were not current when the
	// watch ended.
	Failed int
	// TimedOut is true when the watch ended at its timeout with objects
	// still in progress.
	TimedOut bool
	// Interrupted is true when the watch was stopped before its end (Ctrl-C,
	// SIGTERM): the objects not current then were not seen to fail, only
	// not seen to their end.
	Interrupted bool
	Elapsed     time.Duration
}

// RolloutFailedLine starts the description the tool gives, in Helm's
// history, a revision whose rollout failed; what follows says what failed.
const RolloutFailedLine = "Rollout failed after the upgrade: "

// Object states at the end of a watch.
const (
	StateCurrent    = "current"
	StateFailed     = "failed"
	StateInProgress = "in-progress" // still at the watch's timeout or interruption
	// StateUnknown: the object could not be watched (its kind is not
	// served, or listing it is forbidden); not counted as failed.
	StateUnknown = "unknown"
)

// ObjectOutcome is one object's outcome.
type ObjectOutcome struct {
	ID manifest.ObjectID
	// State is one of the State constants.
	State string
	// Detail is the workload's last progress, e.g. "3/3 updated, 3/3 ready".
	Detail string
	// Reason says, in words, why the object failed or is not current (the
	// image that cannot be pulled, the exit code of a crash loop, the
	// scheduler's message, ...); "" when it is current.
	Reason string
	// Predicted is what the plan said of its pods and claims, Observed
	// what was seen (pod and claim UIDs before the apply and after the
	// watch).
	Predicted, Observed string
	AsPredicted         bool
	// Pod and claim counts behind Observed: pods before the apply and how
	// many of them are still there (same UID); claims likewise.
	PodsBefore, PodsKept     int
	ClaimsBefore, ClaimsKept int
}

// OK reports whether every object became current.
func (o *Outcome) OK() bool { return o != nil && o.Failed == 0 }
