// Package plan holds the domain model of an upgrade plan: what will happen to
// each object, why, and whether it is destructive. It is pure data; building a
// plan from a cluster happens in the stages before it.
package plan

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

// APIVersion versions the JSON form of a plan (pkg/report defines that form)
// and of a saved plan.
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
	// ClassManual is a change Helm does not make: a CRD of the chart's
	// crds/ directory that differs from the live one (helm upgrade never
	// applies crds/), or is absent from the cluster on an upgrade. The user
	// applies it; the plan says what that does.
	ClassManual Class = "manual"
	// ClassDataLoss and ClassRecreatable are an uninstall's verdicts on
	// what it deletes: data lost that re-installing does not bring back (a
	// claim's volume, a CRD's custom resources, a namespace's contents),
	// or objects a re-install creates again.
	ClassDataLoss    Class = "data-loss"
	ClassRecreatable Class = "recreatable"
)

// Source says who established a reason.
type Source string

// Sources of a reason.
const (
	SourceServer    Source = "server"    // the API server's dry-run answer
	SourceCatalogue Source = "catalogue" // our per-kind knowledge, when no dry-run could be made
	SourceHelm      Source = "helm"      // Helm's own rules (resource policy, ownership, CRDs)
	// SourceDerived: derived without a dry-run, where the server's answer
	// cannot differ (docs/performance.md).
	SourceDerived Source = "derived"
)

// Prediction says how an update's or a create's outcome was established.
type Prediction string

// Predictions.
const (
	// PredictionNone: nothing to predict (a noop, a deletion) or no server
	// to ask (offline, RBAC forbids the dry-run): see the reasons' source.
	PredictionNone Prediction = ""
	// PredictionServer: the API server's dry-run answered.
	PredictionServer Prediction = "server"
	// PredictionDerived: derived without asking the server, whose answer
	// cannot differ: a change confined to metadata labels or annotations
	// that no admission webhook or policy can see (docs/performance.md).
	PredictionDerived Prediction = "derived"
	// PredictionManagedFields: a server-side apply (Helm 4) found a no-op
	// without asking the server: the configuration is the one Helm applied
	// last time, and the live object's managed fields say the apply
	// changes nothing (docs/performance.md).
	PredictionManagedFields Prediction = "managed-fields"
)

// Reason explains a verdict with the field path it concerns.
type Reason struct {
	Path    string
	Message string
	Source  Source
	// Before and After are the live and predicted values at Path, already
	// masked for Secrets. They feed fingerprints; they are not printed raw.
	Before string
	After  string
	// Regenerated is true when the field's value differs between two
	// renders of the same chart and values (randAlphaNum, genCA, now, a
	// checksum of such a value): shown, but never counted as a pending
	// change, never blocking on its own, and left out of fingerprints.
	Regenerated bool
	// IgnoredBy is the user's rule that covers this field, with the same
	// effect as Regenerated; "" when none. IgnoredIn says where the rule was
	// given: "--ignore", or its rules file and position ("chart/.safe-upgrade.yaml#2").
	IgnoredBy string
	IgnoredIn string
	// Manager, on a server-side apply conflict, is the field manager that
	// owns Path (the apply takes the field from it only with
	// --force-conflicts).
	Manager string
	// Consumer, on a ConfigMap or Secret change that makes a workload's next
	// pod fail, names that workload ("Deployment/api").
	Consumer string
}

// Rollout describes which pods a workload update replaces and how.
type Rollout struct {
	Replicas int64
	Strategy string
	// Impact is a one-line human description, e.g. "3 pods replaced one at a
	// time (maxUnavailable 25%, maxSurge 25%)".
	Impact string
}

// Drift is a field whose live value differs from the last release manifest.
type Drift struct {
	Path string
	// Reverted is true when this upgrade puts the release's value back.
	Reverted bool
	// Manager, for a server-side apply release, names the field managers
	// other than Helm that own the live value ("" when none does).
	Manager string
}

// Change is the verdict for one object.
type Change struct {
	ID         manifest.ObjectID
	APIVersion string
	Action     Action
	Class      Class
	// Destructive changes need an acknowledgement before apply.
	Destructive  bool
	Acknowledged bool
	// AckedBy says how it was acknowledged: flag, ack-file, prompt,
	// ack-all-destructive.
	AckedBy     string
	Fingerprint string
	// Blocking changes stop the upgrade whatever is acknowledged.
	Blocking bool
	Reasons  []Reason
	// Prediction says whether the server confirmed the verdict (a dry-run)
	// or it was derived without asking.
	Prediction Prediction
	Rollout    *Rollout
	Drift      []Drift
	Notes      []string
	// Pruned are the fields the render sets and the server's dry-run answer
	// does not hold: of a custom resource, those the installed CRD prunes;
	// of any object, those the API server does not know (a misspelled
	// field: it warns and drops them). HasChanges counts such a change,
	// whatever its action.
	Pruned []string
	// Source is the chart template the object was rendered from (Helm's
	// "# Source:" comment, e.g. "db/templates/statefulset.yaml"); empty when
	// unknown.
	Source string
	// Regenerated is true for an update whose every reason is a field
	// regenerated on every render: --detailed-exitcode does not count it and
	// it is not destructive. An update the server refuses is never
	// Regenerated: a random value in an immutable field fails the upgrade.
	Regenerated bool
	// Ignored is true for an update whose every reason is ignored by a
	// user's rule or regenerated, at least one ignored: as Regenerated.
	Ignored bool
	// LiveResourceVersion pins the live object the change was planned
	// against (saved plans refuse to apply when it moved).
	LiveResourceVersion string
	// Before is the live object and After the predicted one, both with
	// server-managed fields removed and Secret values masked; nil for a
	// noop, whose objects nothing shows.
	Before *unstructured.Unstructured
	After  *unstructured.Unstructured
	// Consumers, of a changed ConfigMap or Secret, are the workloads that
	// read it and what their running pods see of the change.
	Consumers []Consumer
	// RestartedFor, on a workload --restart-stale restarts after Helm's
	// upgrade, names the changed ConfigMaps and Secrets its running pods
	// would not see otherwise ("ConfigMap settings"); see pkg/restart.
	RestartedFor []string
}

// Release identifies the release being upgraded.
type Release struct {
	Name      string
	Namespace string
	// Revision is the revision the upgrade will create; CurrentRevision the
	// one deployed now (0 for an install).
	Revision        int
	CurrentRevision int
	Chart           string
	// Operation is what the plan is of: the Helm action the apply runs.
	// A Release made without one is an upgrade (see Op).
	Operation Operation
	// RollbackTo is the stored revision a rollback goes back to (Revision
	// is the new revision it makes of it); 0 for any other operation.
	RollbackTo int
	// ApplyMethod is how the upgrade applies the objects: ApplyMethodCSA
	// (Helm 3's three-way patch) or ApplyMethodSSA (Helm 4's server-side
	// apply); ForceConflicts is --force-conflicts.
	ApplyMethod    string
	ForceConflicts bool
	// ToServerSide is true when a client-side release moves to server-side
	// apply (--server-side=true): Helm 4 then first hands the fields Helm's
	// client-side patches own (manager helm, operation Update) to its apply,
	// so the apply does not conflict with them.
	ToServerSide bool
	// ForceReplace is Helm 3's --force (Helm 4's --force-replace): with a
	// client-side apply Helm replaces every object of the new manifest that
	// exists with a PUT of the rendered object, changed or not, instead of
	// patching it; Helm 4 refuses it with a server-side apply.
	ForceReplace bool
	// SyncedBy names what applies the plan instead of Helm ("Argo CD
	// Application argocd/shop"): it keeps no Helm release, so Revision and
	// CurrentRevision are 0. "" for a Helm release.
	SyncedBy string
}

// Operation is a Helm action a plan can be of; its value is what the JSON
// report's release.operation says.
type Operation string

// The operations: install and upgrade (helm upgrade [--install]),
// rollback (helm rollback); uninstall is the operation still to come.
const (
	OperationInstall   Operation = "install"
	OperationUpgrade   Operation = "upgrade"
	OperationRollback  Operation = "rollback"
	OperationUninstall Operation = "uninstall"
)

// InstallOrUpgrade is the operation of helm upgrade [--install]: an install
// when the release does not exist yet.
func InstallOrUpgrade(install bool) Operation {
	if install {
		return OperationInstall
	}
	return OperationUpgrade
}

// Op is the release's operation, an upgrade when none was set.
func (r Release) Op() Operation {
	if r.Operation == "" {
		return OperationUpgrade
	}
	return r.Operation
}

// Installs reports whether the operation is an install.
func (r Release) Installs() bool { return r.Op() == OperationInstall }

// Apply methods, as Helm 4 records them in a release.
const (
	ApplyMethodCSA = "csa"
	ApplyMethodSSA = "ssa"
)

// ServerSide reports whether the upgrade is a server-side apply.
func (r Release) ServerSide() bool { return r.ApplyMethod == ApplyMethodSSA }

// Hook is a Helm hook of the new release (or, with Action delete, of the
// last one only). Hooks are not patched like release objects: Helm creates
// them afresh when their event runs, so a changed hook is what runs at
// apply, compared here with the last release's.
type Hook struct {
	Kind   string
	Name   string
	Events []string
	// DeletePolicies are helm.sh/hook-delete-policy values; Helm's default
	// is before-hook-creation.
	DeletePolicies []string
	Weight         int
	// ID identifies the hook object; Action is create (new hook), update
	// (changed since the last release), noop or delete (no longer in the
	// chart: it no longer runs; Helm does not delete it).
	ID     manifest.ObjectID
	Action Action
	// RunsAtApply is true when one of Events runs in this operation
	// (pre/post-upgrade, or pre/post-install for an install) and hooks are
	// not disabled (--no-hooks).
	RunsAtApply bool
	// Before and After are the last release's hook and the new one, Secret
	// values masked.
	Before, After *unstructured.Unstructured
}

// Plan is the full prediction for one upgrade.
type Plan struct {
	Release       Release
	ServerVersion string
	Offline       bool
	Changes       []Change
	Hooks         []Hook
	// Notes are plan-wide remarks (CRDs from crds/ not upgraded, checks
	// skipped, ...).
	Notes []string
	// Blockers are plan-wide reasons the upgrade cannot succeed, whatever
	// is acknowledged (a release record too large for its storage).
	Blockers []string
	// SecretCopies say where the new render copies a value of one of the
	// release's Secrets into an object or hook that is not a Secret (masked
	// in the plan; anyone who may read that kind can read the value): a
	// finding for the chart's author. Each is also a note, of its change or,
	// for a hook, of the plan.
	SecretCopies []string
	// Outcome is what the watch after the apply observed; nil for a plan
	// that was not applied or not watched (--dry-run, --no-watch).
	Outcome *Outcome
	// Uninstalled is what an applied uninstall left; nil otherwise.
	Uninstalled *Uninstalled
}

// Summary counts changes by verdict.
type Summary struct {
	Create      int
	Delete      int
	Noop        int
	InPlace     int
	Rolling     int
	Recreate    int
	Invalid     int
	Destructive int
	Blocked     int
	// Regenerated counts updates that change only regenerated fields; they
	// are not counted by class.
	Regenerated int
	// Ignored counts updates that change only fields ignored by rules.
	Ignored int
	// Manual counts the changes Helm does not make (ClassManual); they are
	// not counted by action.
	Manual int
}

// Summary counts the plan's changes. Blocked counts destructive changes that
// are not acknowledged.
func (p *Plan) Summary() Summary {
	var s Summary
	for _, c := range p.Changes {
		switch {
		case c.Class == ClassManual:
			s.Manual++
		case c.Action == ActionCreate:
			s.Create++
		case c.Action == ActionDelete:
			s.Delete++
		case c.Action == ActionNoop:
			s.Noop++
		case c.Action == ActionUpdate:
			if c.Regenerated {
				s.Regenerated++
				break
			}
			if c.Ignored {
				s.Ignored++
				break
			}
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

// Verdict is the change's class, or its action when it has none: the one
// word messages use for what happens ("recreate-required", "delete").
func (c *Change) Verdict() string {
	if c.Class != ClassNone {
		return string(c.Class)
	}
	return string(c.Action)
}

// AckFlag is the flag that acknowledges exactly this change, bound to its
// fingerprint: --ack Kind[.group]/[namespace/]name@fingerprint.
func (c *Change) AckFlag() string {
	s := "--ack " + c.ID.String()
	if c.Fingerprint != "" {
		s += "@" + c.Fingerprint
	}
	return s
}

// HasRegenerated reports whether an update changes only fields regenerated
// on every render (--fail-on-regenerated counts them).
func (p *Plan) HasRegenerated() bool {
	return slices.ContainsFunc(p.Changes, func(c Change) bool { return c.Regenerated })
}

// HasChanges reports whether anything would change, regenerated fields
// aside (they change on every render, whatever the chart and values), and
// manual changes aside (the upgrade does not make them); an object whose
// fields the server prunes or does not know counts (the render is not what
// is stored).
func (p *Plan) HasChanges() bool {
	for _, c := range p.Changes {
		if len(c.Pruned) > 0 || c.Action != ActionNoop && !c.Regenerated && !c.Ignored && c.Class != ClassManual {
			return true
		}
	}
	return false
}
