// Package planner builds a plan: it joins the last release manifest, the new
// render and the live objects, predicts each change (server-side dry-run or,
// failing that, locally) and classifies it. Plan mode sends no write to the
// cluster: every request other than a read carries dryRun=All.
package planner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/panics"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apis"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// Input is what the render stage hands over.
type Input struct {
	Release plan.Release
	// PreviousManifest is the manifest of the release Helm diffs against
	// (empty for an install); NextManifest the new render.
	PreviousManifest string
	NextManifest     string
	// NextParsed, when set, holds the documents of NextManifest already
	// parsed (manifest.SplitRemembering of it, e.g. by status): they are
	// shared instead of parsed again.
	NextParsed *manifest.Parsed
	// PreviousSplit, when set, is PreviousManifest split while the render
	// ran (manifest.SplitInBackground, named and namespaced as Plan names
	// the release's manifest, PreviousName set or not); a split of another
	// manifest, name or namespace is not used. NextParsed is not used with
	// it.
	PreviousSplit *manifest.Background
	// PreviousName labels the previous manifest in errors (offline: the base
	// chart or manifest file); empty means the release revision.
	PreviousName string
	// Hooks are the new release's hooks in Helm's run order, PreviousHooks
	// the last release's (none for an install); HooksDisabled is --no-hooks.
	Hooks, PreviousHooks []HookManifest
	HooksDisabled        bool
	Notes                []string
	// SecondRender is the new render made again from the same chart and
	// values; fields whose values differ between it and NextManifest are
	// regenerated on every render (see plan.Reason.Regenerated). Empty: no
	// second render, nothing is marked.
	SecondRender string
	// Ignore are the user's rules (--ignore, the rules file); the default
	// rules (defaultRules) follow them.
	Ignore []IgnoreRule
	// APIs, when set, judges the API versions of both manifests' objects
	// against the target cluster (apis.Mark); nil: not judged.
	APIs apis.Checker
	// TakeOwnership is --take-ownership: Helm adopts objects that exist in
	// the cluster without this release's ownership metadata instead of
	// refusing the upgrade.
	TakeOwnership bool
	// CRDs are the files of the chart's crds/ directories (see crdChanges);
	// SkipCRDs is --skip-crds. Offline, PreviousCRDs are the base chart's,
	// and BaseCRDsUnknown says the base has none to compare with (a
	// manifest).
	CRDs, PreviousCRDs []CRDFile
	SkipCRDs           bool
	BaseCRDsUnknown    bool
	// RestartStale is --restart-stale: the workloads whose running pods
	// would keep a changed ConfigMap's or Secret's old value are planned
	// to be restarted after Helm's upgrade (restartStale).
	RestartStale bool
	// Applier, when set, is what applies the render instead of Helm (Argo
	// CD): see Applier. nil: Helm.
	Applier *Applier
}

// Applier is a tool that applies the render instead of Helm, and differs
// from it in what the plan predicts: the metadata it adds to each object,
// the objects in the cluster it applies over, the ones it leaves when the
// render drops them.
type Applier struct {
	// Mark adds to obj (of identity id) what the applier adds before it
	// applies it, instead of Helm's ownership metadata.
	Mark func(obj *unstructured.Unstructured, id manifest.ObjectID)
	// Adopted is the note of an object in the cluster that the previous
	// manifest does not name: the applier applies over it, where Helm
	// refuses one its release does not own.
	Adopted string
	// Deletes is the reason of an object the render drops that the applier
	// deletes; Kept says why it leaves liveObj in the cluster instead ("":
	// it deletes it).
	Deletes string
	Kept    func(liveObj *unstructured.Unstructured) string
	// Release, when set, is how the applier applies the rendered obj when
	// an object may override the release's apply method (Argo CD's
	// sync-options annotation); nil: rel for every object.
	Release func(rel plan.Release, obj *unstructured.Unstructured) plan.Release
	// Takes says how the applier's forced server-side apply takes a field
	// another manager owns ("": Helm's words).
	Takes string
}

// Planner builds plans against one cluster (Live), or offline from two
// renders alone (Offline).
type Planner struct {
	Cluster       Cluster
	Patcher       *predict.Patcher
	Classifier    *classify.Classifier
	ServerVersion string
	// Concurrency bounds the objects evaluated at once (GET + dry-run).
	Concurrency int
	// Masker masks Secret values in every object the plan holds (keyed per
	// plan; a saved plan applies with the key it was made with).
	Masker *redact.Masker
	// Sanitizer receives the Secret values of the last release, the new
	// render and the live objects, and removes them from the plan's texts;
	// the caller reuses it for what the apply prints. nil: one is made for
	// each plan.
	Sanitizer *redact.Sanitizer
	// ServerDryRun says which updates are sent to the server as dry-runs
	// (--server-dry-run); "" is ServerDryRunNeeded.
	ServerDryRun ServerDryRun
	// Stats, when set, counts how each update was predicted (--debug).
	Stats *Stats
}

// ServerDryRun says which updates the planner sends to the API server as
// dry-runs.
type ServerDryRun string

// Values of --server-dry-run.
const (
	// ServerDryRunNeeded asks the server wherever its answer can differ
	// from what the planner derives; see predict.Derive and
	// Observers.Observed.
	ServerDryRunNeeded ServerDryRun = "needed"
	// ServerDryRunAll asks the server about every update, as before
	// derivation existed.
	ServerDryRunAll ServerDryRun = "all"
)

// ParseServerDryRun reads the value of --server-dry-run.
func ParseServerDryRun(s string) (ServerDryRun, error) {
	switch v := ServerDryRun(s); v {
	case "", ServerDryRunNeeded:
		return ServerDryRunNeeded, nil
	case ServerDryRunAll:
		return v, nil
	}
	return "", fmt.Errorf("--server-dry-run=%s: want %s or %s", s, ServerDryRunNeeded, ServerDryRunAll)
}

// New returns a Planner for cluster.
func New(cluster Cluster, serverVersion string) *Planner {
	return &Planner{Cluster: cluster, Patcher: predict.NewPatcher(), Classifier: classify.New(),
		ServerVersion: serverVersion, Concurrency: live.DefaultConcurrency, Masker: redact.NewMasker()}
}

// Plan predicts and classifies every object of both releases.
func (p *Planner) Plan(ctx context.Context, in Input) (*plan.Plan, error) {
	ns := in.Release.Namespace
	in.Ignore = append(slices.Clone(in.Ignore), defaultRules()...)
	prevName := ReleaseManifestName(in.Release.Name, in.Release.CurrentRevision)
	if in.PreviousName != "" {
		prevName = in.PreviousName
	}
	nextName := "new render of chart " + in.Release.Chart
	prev, parsed, err, early := in.PreviousSplit.Take(prevName, in.PreviousManifest, ns)
	in.PreviousSplit = nil
	var next *manifest.Set
	var regen map[manifest.ObjectID][]string
	if early {
		// The last release was split during the render: the new render
		// and the second one share the documents it repeats word for
		// word.
		if err != nil {
			// The new render's errors come first, as without the early
			// split: a broken chart is what to fix before a stored
			// release.
			if next, parsed, nerr := manifest.SplitRemembering(nextName, in.NextManifest, ns, p.Cluster); nerr != nil {
				return nil, nerr
			} else if _, nerr := regenerated(next, in.SecondRender, in.Release, p.Cluster, parsed); nerr != nil {
				return nil, nerr
			}
			return nil, err
		}
		if next, err = manifest.SplitAdding(nextName, in.NextManifest, ns, p.Cluster, parsed); err != nil {
			return nil, err
		}
		if regen, err = regenerated(next, in.SecondRender, in.Release, p.Cluster, parsed); err != nil {
			return nil, err
		}
	} else {
		// The last release and the second render share the parsed content
		// of the new render's documents they repeat word for word.
		parsed = in.NextParsed
		if parsed != nil {
			next, err = manifest.SplitSharing(nextName, in.NextManifest, ns, p.Cluster, parsed)
		} else {
			next, parsed, err = manifest.SplitRemembering(nextName, in.NextManifest, ns, p.Cluster)
		}
		if err != nil {
			return nil, err
		}
		// Before the last release is parsed: the second render's objects
		// are garbage by then, and three parsed releases are never held
		// at once.
		if regen, err = regenerated(next, in.SecondRender, in.Release, p.Cluster, parsed); err != nil {
			return nil, err
		}
		if prev, err = manifest.SplitSharing(prevName, in.PreviousManifest, ns, p.Cluster, parsed); err != nil {
			return nil, err
		}
	}
	// Server and Helm messages are sanitised of every Secret value.
	san := p.Sanitizer
	if san == nil {
		san = redact.NewSanitizer(p.Masker)
	}
	addSecrets(san, prev, next)
	for _, hs := range [][]HookManifest{in.Hooks, in.PreviousHooks} {
		for _, h := range hs {
			san.AddManifest(h.Manifest) // a hook Secret's values, copied elsewhere
		}
	}
	hooks, err := p.hooks(in)
	if err != nil {
		return nil, err
	}
	ids := manifest.UnionIDs(prev, next)
	crdKinds := manifest.CRDKinds(next)
	crds, err := splitCRDs(in.CRDs, p.Cluster)
	if err != nil {
		return nil, err
	}
	if in.Release.Installs() && !in.SkipCRDs {
		maps.Copy(crdKinds, manifest.CRDKinds(crds)) // created before the templates' objects
	}
	// What the CRD and API checks need, kept small: the sets are dropped
	// below.
	var templated map[manifest.ObjectID]bool
	if crds.Len() > 0 {
		templated = make(map[manifest.ObjectID]bool, len(ids))
		for _, id := range ids {
			templated[id] = true
		}
	}
	var prevAPIs, nextAPIs []apis.Object
	if in.APIs != nil {
		prevAPIs, nextAPIs = apis.Objects(prev), apis.Objects(next)
	}
	var work []evaluation
	// An applier's object may apply server-side by its own override
	// (Applier.Release): the live objects keep their managed fields.
	p.Stats.timed(stageLive, func() { work = p.evaluations(ctx, ids, prev, next, in.Release.ServerSide() || in.Applier != nil, san) })
	// ids are sorted, so changes come out in report order.
	changes := make([]plan.Change, len(ids))
	// What each workload of the new render reads of ConfigMaps and Secrets,
	// taken while its object is decoded (configConsumers).
	reads := make([][]classify.ConfigRef, len(ids))
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
				return err
			})
		}
		err = g.Wait()
	})
	if err != nil {
		return nil, san.Error(err)
	}
	p.templateCRDs(ctx, changes)
	crdChanges, crdNotes, err := p.crdChanges(ctx, in, crds, templated)
	if err != nil {
		return nil, err
	}
	changes = append(changes, crdChanges...)
	if len(crdChanges) > 0 {
		sort.SliceStable(changes, func(i, j int) bool { return changes[i].ID.Less(changes[j].ID) })
	}
	notePruned(changes, crds)
	copies := sanitizeChanges(changes, san) // before fingerprints
	hookCopies := sanitizeHooks(hooks, san)
	markRenames(changes)
	p.noteBudgets(ctx, changes)
	inside := map[manifest.ObjectID][]classify.ConfigRef{}
	for i, r := range reads {
		if len(r) > 0 {
			inside[ids[i]] = r
		}
	}
	readNotes := p.configConsumers(ctx, ns, changes, inside, san)
	restartStale(changes, in.RestartStale)
	for i := range changes {
		if changes[i].Destructive {
			changes[i].Fingerprint = plan.Fingerprint(changes[i])
		}
	}
	out := &plan.Plan{
		Release:       sanitizeRelease(in.Release, san),
		ServerVersion: p.ServerVersion,
		Offline:       p.Cluster.Offline,
		Changes:       changes,
		Hooks:         hooks,
		Notes:         append(slices.Concat(in.Notes, crdNotes, readNotes), hookCopies...),
		SecretCopies:  append(copies, hookCopies...),
	}
	if in.APIs != nil {
		apis.MarkObjects(out, prevAPIs, nextAPIs, crdKinds, in.APIs)
	}
	if in.HooksDisabled && len(hooks) > 0 {
		out.Notes = append(out.Notes, "--no-hooks: Helm runs none of the chart's hooks in this operation")
	}
	if out.Offline {
		out.Notes = append(out.Notes, "offline: the base and head renders were compared without cluster access; every verdict comes from the catalogue, and live state and drift were not checked")
	}
	return out, nil
}

// ReleaseManifestName labels a release's stored manifest in errors.
func ReleaseManifestName(release string, revision int) string {
	return fmt.Sprintf("release %q revision %d manifest", release, revision)
}

// evaluation is what one change is evaluated from: the object's
// last-release and new forms (either may be nil) and, when a LIST read it
// already, its live state, still encoded.
type evaluation struct {
	prev, next *manifest.Object
	prefetched *live.State
}

// evaluations pairs each of ids with its forms and prefetched live state.
// Nothing else holds them once the sets are dropped, so each object's
// parsed and live forms become garbage as soon as its change is evaluated:
// memory grows with the changes, not with the release. A live object is
// decoded by its evaluation (change); those that may hold a Secret value
// are decoded once before, for san: a server's answer about one object (a
// warning is printed as it comes) may quote another.
func (p *Planner) evaluations(ctx context.Context, ids []manifest.ObjectID, prev, next *manifest.Set, ssa bool, san *redact.Sanitizer) []evaluation {
	work := make([]evaluation, len(ids))
	objs := make([]*manifest.Object, 0, len(ids))
	for i, id := range ids {
		work[i] = evaluation{prev: prev.Get(id), next: next.Get(id)}
		if o := work[i].next; o != nil {
			objs = append(objs, o)
		} else {
			objs = append(objs, work[i].prev)
		}
	}
	prefetched := p.Cluster.Objects.Prefetch(redact.WithReadsSanitized(ctx), objs, leanLive(prev, ssa))
	for i, id := range ids {
		if st, ok := prefetched[id]; ok {
			work[i].prefetched = &st
			if apiVersion, kind, data, encoded := st.Encoded(); encoded && redact.MayHoldSecrets(apiVersion, kind, data) {
				san.Add(st.Decode().Obj)
			}
		}
	}
	return work
}

// leanLive drops from the live objects what a client-side (Helm 3) plan
// never reads: metadata.managedFields, server-side apply's field ownership,
// often more than half of an object. A Helm 4 server-side apply reads them
// (conflicts, owners of drift), and so does an object without a last-release
// form, which Helm diffs against the live object itself.
func leanLive(prev *manifest.Set, ssa bool) live.Lean {
	if ssa {
		return nil
	}
	return func(o *manifest.Object) bool { return prev.Get(o.ID) != nil }
}

// change evaluates one object.
func (p *Planner) change(ctx context.Context, in Input, e evaluation, crdKinds map[schema.GroupKind]bool, san *redact.Sanitizer) (plan.Change, error) {
	prev, next := e.prev, e.next
	if err := manifest.LoadPair(prev, next); err != nil {
		return plan.Change{}, err
	}
	obj := next
	if obj == nil {
		obj = prev
	} else {
		// Here rather than for the whole render at once: a metadata map
		// more for every object, held until its evaluation otherwise.
		if in.Applier != nil {
			if in.Applier.Release != nil {
				in.Release = in.Applier.Release(in.Release, next.Obj)
			}
			in.Applier.Mark(next.Obj, next.ID)
		} else {
			addHelmMetadata(next.Obj, in.Release.Name, in.Release.Namespace)
		}
	}
	c := plan.Change{ID: obj.ID, APIVersion: obj.GVK.GroupVersion().String(), Source: obj.Source}
	// The unknown-field warnings of this object's dry-runs (unknownFields).
	ctx, warned := predict.WithWarnings(ctx)
	var state live.State
	if e.prefetched != nil {
		state = e.prefetched.Decode() // its values are in san already (evaluations)
	} else {
		state = p.Cluster.Objects.Get(redact.WithReadsSanitized(ctx), obj, prev)
		san.Add(state.Obj) // values only the cluster holds
	}
	if state.Err != nil {
		return c, state.Err
	}
	liveObj := state.Obj
	if liveObj != nil {
		c.LiveResourceVersion = liveObj.GetResourceVersion()
	}
	switch {
	case next == nil:
		if err := p.deletion(ctx, in.Release.Op(), in.Applier, &c, liveObj); err != nil {
			return c, err
		}
	case liveObj == nil:
		p.creation(ctx, &c, in.Release, next, crdKinds)
	default:
		if err := p.update(ctx, &c, in, prev, next, liveObj); err != nil {
			return c, err
		}
	}
	if next != nil {
		p.unknownFields(ctx, &c, in.Release, next, liveObj != nil, warned)
	}
	if c.Action == plan.ActionNoop {
		// Nothing shows or saves a noop's objects (no diff, no state to pin):
		// keeping them would make memory grow with the release.
		c.Before, c.After = nil, nil
		if in.RestartStale && liveObj != nil && classify.Restartable(obj.GVK.GroupKind()) {
			c.Before = p.shown(liveObj) // what a restart would change (restartStale)
		}
	}
	return c, nil
}

// removal says why an object of the last release goes, per operation.
func removal(op plan.Operation) string {
	switch op {
	case plan.OperationRollback:
		return "not in the revision rolled back to"
	case plan.OperationUninstall:
		return "uninstalled with the release"
	}
	return "removed from the chart"
}

// KeptPath is the reason path of an object a deletion leaves in the
// cluster because of its resource policy.
const KeptPath = "metadata.annotations[helm.sh/resource-policy]"

func (p *Planner) deletion(ctx context.Context, op plan.Operation, applier *Applier, c *plan.Change, liveObj *unstructured.Unstructured) error {
	gone := removal(op)
	if liveObj == nil {
		c.Action = plan.ActionNoop
		c.Notes = append(c.Notes, gone+"; already absent from the cluster")
		return nil
	}
	c.Before = p.shown(liveObj)
	if manifest.Kept(liveObj) {
		c.Action = plan.ActionNoop
		c.Reasons = []plan.Reason{{Path: KeptPath, Source: plan.SourceHelm,
			Message: gone + " but kept (helm.sh/resource-policy: keep): Helm leaves it in the cluster, no longer managed by the release"}}
		return nil
	}
	if applier != nil {
		if why := applier.Kept(liveObj); why != "" {
			c.Action = plan.ActionNoop
			c.Reasons = []plan.Reason{{Message: why, Source: plan.SourceHelm}}
			return nil
		}
	}
	c.Action = plan.ActionDelete
	gk := schema.GroupKind{Group: c.ID.Group, Kind: c.ID.Kind}
	msg := gone + ": Helm deletes it"
	if applier != nil {
		msg = applier.Deletes
	}
	d, destructive := classify.DestructiveKind(gk)
	if destructive && applier != nil {
		msg += "; " + d.Deleted
	} else if destructive {
		msg += " (no helm.sh/resource-policy: keep); " + d.Deleted
	}
	c.Destructive = destructive
	c.Reasons = []plan.Reason{{Message: msg, Source: plan.SourceHelm}}
	more, err := p.retention(ctx, c.ID, liveObj)
	c.Reasons = append(c.Reasons, more...)
	if op == plan.OperationUninstall {
		// Nothing of the release comes back but by a re-install: what
		// blocks is the data it would not bring back, a StatefulSet's
		// claims among it when its retention policy deletes them.
		c.Destructive = destructive && d.DataLoss || slices.ContainsFunc(more, func(r plan.Reason) bool { return r.Path == claimRetentionPath })
		c.Class = plan.ClassRecreatable
		if c.Destructive {
			c.Class = plan.ClassDataLoss
		}
	}
	return err
}

func (p *Planner) creation(ctx context.Context, c *plan.Change, rel plan.Release, next *manifest.Object, crdKinds map[schema.GroupKind]bool) {
	c.Action = plan.ActionCreate
	var created *unstructured.Unstructured
	var err error
	if rel.ServerSide() {
		// Helm 4 creates with the same server-side apply it updates with.
		created, err = p.sendApply(ctx, next, rel.ForceConflicts)
	} else {
		created, err = p.sendCreate(ctx, next)
	}
	var notServed *live.KindNotServedError
	switch {
	case errors.Is(err, live.ErrNoServer):
		c.After = p.shown(next.Obj)
		// What the catalogue knows the server's validation rejects.
		if reasons := classify.Rejected(next.GVK.GroupKind(), next.Obj); len(reasons) > 0 {
			c.Class, c.Destructive, c.Blocking, c.Reasons = plan.ClassInvalid, true, true, reasons
		}
		return
	case errors.As(err, &notServed):
		c.After = p.shown(next.Obj)
		if meta.IsNoMatchError(err) && crdKinds[next.GVK.GroupKind()] {
			c.Notes = append(c.Notes, "not validated by the server: its CustomResourceDefinition is created by this release")
			return
		}
		// Helm's upgrade fails on a kind the cluster does not serve (a
		// removed API version, a missing CRD) before changing anything.
		c.Class = plan.ClassInvalid
		c.Destructive, c.Blocking = true, true
		c.Reasons = []plan.Reason{{Path: "apiVersion", Message: "the cluster does not serve this kind: " + err.Error(), Source: plan.SourceServer}}
		return
	case err != nil:
		if rejectsObject(err) {
			c.Prediction = plan.PredictionServer
			c.Class = plan.ClassInvalid
			c.Destructive, c.Blocking = true, true
			c.Reasons = []plan.Reason{{Message: "the server rejects the new object: " + sanitize(err, next.Obj), Source: plan.SourceServer}}
		} else {
			c.Notes = append(c.Notes, "not validated by the server: "+sanitize(err, next.Obj))
		}
		created = next.Obj
	default:
		c.Prediction = plan.PredictionServer
		markPruned(c, next.Obj, created)
	}
	c.After = p.shown(created)
}

func (p *Planner) update(ctx context.Context, c *plan.Change, in Input, prev, next *manifest.Object, liveObj *unstructured.Unstructured) error {
	c.Action = plan.ActionUpdate
	rel := in.Release
	if prev == nil {
		owner := liveObj.GetAnnotations()[manifest.ReleaseNameAnnotation]
		owned := owner == rel.Name && liveObj.GetAnnotations()[manifest.ReleaseNamespaceAnnotation] == rel.Namespace
		if in.Applier != nil {
			c.Notes = append(c.Notes, in.Applier.Adopted)
		} else if !owned && in.TakeOwnership {
			c.Notes = append(c.Notes, fmt.Sprintf("exists in the cluster without this release's ownership (owner %q): --take-ownership adopts it into release %s/%s", owner, rel.Namespace, rel.Name))
		} else if !owned {
			c.Class = plan.ClassInvalid
			c.Destructive, c.Blocking = true, true
			c.Reasons = []plan.Reason{{Path: "metadata.annotations[meta.helm.sh/release-name]", Source: plan.SourceHelm,
				Message: fmt.Sprintf("exists in the cluster but is not owned by release %s/%s (owner %q): Helm refuses to adopt it", rel.Namespace, rel.Name, owner)}}
			c.Before = p.shown(liveObj)
			return nil
		}
	}
	if rel.ForceReplace && !rel.ServerSide() {
		return p.replace(ctx, c, in, prev, next, liveObj)
	}
	return p.patched(ctx, c, in, prev, next, liveObj)
}

// patched predicts and classifies the update as Helm makes it without
// --force: a three-way patch (Helm 3), or a server-side apply (Helm 4).
func (p *Planner) patched(ctx context.Context, c *plan.Change, in Input, prev, next *manifest.Object, liveObj *unstructured.Unstructured) error {
	secret := redact.Sensitive(liveObj) // fail closed
	rel := in.Release
	var original *unstructured.Unstructured
	if prev != nil {
		original = prev.Obj
	}
	ssa := rel.ServerSide()
	var decided predict.ApplyDecision
	// decideApply's local merge is Helm's field manager's: another
	// applier's apply is the server's to answer.
	if ssa && in.Applier == nil {
		decided = p.decideApply(ctx, rel, prev, next, liveObj)
		if decided.Verdict == predict.ApplyNoop {
			applyNoop(c, original, liveObj, next.Obj)
			return nil
		}
	}
	// Helm's three-way patch: what Helm 3 sends, and for Helm 4, which
	// sends none, what the local form of an apply asked of the server is
	// built from; a change decided from the managed fields needs none.
	var patch []byte
	var pt types.PatchType
	threeWay := func() (err error) {
		if patch, pt, err = p.Patcher.Patch(original, next.Obj, liveObj); err != nil {
			return fmt.Errorf("%s: building the patch Helm would send: %w", c.ID, err)
		}
		return nil
	}
	if !ssa {
		if err := threeWay(); err != nil {
			return err
		}
		if predict.Empty(patch) {
			// Helm sends nothing for an empty patch. Helm 4's server-side
			// apply sends every object, and may conflict even when nothing
			// changes.
			c.Action = plan.ActionNoop
			c.Drift = classify.Drift(original, liveObj, next.Obj, liveObj)
			return nil
		}
	}
	c.Before = p.shown(liveObj)
	u := classify.Update{GroupKind: schema.GroupKind{Group: c.ID.Group, Kind: c.ID.Kind},
		Live: p.Masker.Object(liveObj), Secret: secret,
		Original: p.Masker.Object(original), Target: p.Masker.Object(next.Obj)}
	var predicted *unstructured.Unstructured
	var conflicts []predict.Conflict
	start := time.Now()
	switch {
	case !ssa:
		predicted = p.derive(ctx, next, func() (*unstructured.Unstructured, string) { return predict.Derive(liveObj, patch, pt) })
	case decided.Verdict == predict.ApplyChange:
		predicted = p.derive(ctx, next, func() (*unstructured.Unstructured, string) { return predict.DeriveApply(liveObj, decided.Merged) })
	}
	if predicted != nil {
		// The derived object is the patch applied locally, too.
		masked := p.Masker.Object(predicted)
		u.Predicted, u.Local, u.Derived = masked, masked, true
		c.Prediction = plan.PredictionDerived
	} else {
		if ssa {
			if err := threeWay(); err != nil {
				return err
			}
		}
		local, err := p.Patcher.ApplyLocal(liveObj, patch, pt)
		if err != nil {
			return fmt.Errorf("%s: %w", c.ID, err)
		}
		u.Local = p.Masker.Object(local)
		if ssa {
			predicted, conflicts, err = p.dryRunApply(ctx, c, &u, next, rel.ToServerSide, decided.Conflicts)
		} else {
			predicted, err = p.dryRun(ctx, c, &u, next, pt, patch)
		}
		if err != nil {
			return err
		}
	}
	p.Stats.add(stagePredict, start)
	defer p.Stats.add(stageClassify, time.Now())
	if !u.Derived {
		markPruned(c, next.Obj, predicted)
	}
	v := p.Classifier.Classify(u)
	if v.Noop {
		c.Action = plan.ActionNoop
	}
	c.Class, c.Reasons, c.Rollout = v.Class, v.Reasons, v.Rollout
	c.Destructive = v.Class == plan.ClassRecreateRequired || v.Class == plan.ClassInvalid
	c.Blocking = v.Class == plan.ClassInvalid
	if d, _ := classify.DestructiveKind(schema.GroupKind{Group: c.ID.Group, Kind: c.ID.Kind}); d.Migrate != "" && v.Class == plan.ClassRecreateRequired {
		// Never acknowledgeable: the tool does not delete volumes.
		c.Blocking = true
		path := "spec"
		if len(c.Reasons) > 0 {
			path = c.Reasons[0].Path
		}
		c.Reasons = append([]plan.Reason{{Path: path, Message: d.Migrate, Source: plan.SourceCatalogue}}, c.Reasons...)
	}
	after := predicted
	if after == nil {
		after = u.Backfill()
	}
	c.After = p.shown(after)
	c.Drift = classify.Drift(original, liveObj, next.Obj, after)
	if ssa && (len(c.Drift) > 0 || len(conflicts) > 0) { // the owners are read for these only
		owners := ownDrift(c, liveObj)
		if len(conflicts) > 0 {
			conflicted(c, conflicts, owners, u.Live, u.Target, rel.ForceConflicts)
			if in.Applier != nil && in.Applier.Takes != "" {
				forcedBy(c, in.Applier.Takes)
			}
		}
	}
	return nil
}

// conflicted turns an update whose server-side apply conflicts with other
// field managers into its verdict. Helm 4's upgrade fails on a conflict, so
// without --force-conflicts the change is invalid and blocks; with it, the
// apply takes the fields from their owners: a destructive change to
// acknowledge, of the class the forced apply has. live and target are
// masked for Secrets.
func conflicted(c *plan.Change, conflicts []predict.Conflict, owners *classify.Ownership, live, target *unstructured.Unstructured, force bool) {
	forced := c.Verdict()
	if c.Action == plan.ActionNoop {
		forced = "in-place"
	}
	var reasons []plan.Reason
	for _, cf := range conflicts {
		path := owners.Path(cf.Path)
		msg := fmt.Sprintf("conflict with field manager %q: Helm 4's server-side apply fails here; with --force-conflicts it takes the field from %q and the update is %s", cf.Manager, cf.Manager, forced)
		if force {
			msg = fmt.Sprintf("owned by field manager %q: --force-conflicts takes the field from it (the chart's value replaces %q's, and Helm becomes its owner)", cf.Manager, cf.Manager)
		}
		reasons = append(reasons, plan.Reason{Path: path, Message: msg, Source: plan.SourceServer, Manager: cf.Manager,
			Before: classify.ValueAt(live, path), After: classify.ValueAt(target, path)})
	}
	c.Action = plan.ActionUpdate
	c.Destructive = true
	if force {
		c.Reasons = append(reasons, c.Reasons...)
		if c.Class == plan.ClassNone {
			c.Class = plan.ClassInPlace
		}
		return
	}
	// The upgrade fails: what the forced apply would do is a note, and a
	// conflicting field's drift is not reverted by it.
	var paths []string
	for _, r := range c.Reasons {
		paths = append(paths, r.Path)
	}
	if len(paths) > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("with --force-conflicts the update would be %s: %s", forced, strings.Join(paths, ", ")))
	}
	var drift []plan.Drift
	for _, d := range c.Drift {
		if !slices.ContainsFunc(reasons, func(r plan.Reason) bool { return classify.Under(d.Path, r.Path) }) {
			drift = append(drift, d)
		}
	}
	c.Class, c.Blocking, c.Reasons, c.Rollout, c.Drift = plan.ClassInvalid, true, reasons, nil, drift
}

// forcedBy rewords the reasons conflicted gave a forced apply for an
// applier other than Helm, whose flags they name: takes says how it takes
// the field.
func forcedBy(c *plan.Change, takes string) {
	for i, r := range c.Reasons {
		if r.Manager != "" {
			c.Reasons[i].Message = fmt.Sprintf("owned by field manager %q: %s", r.Manager, takes)
		}
	}
}

// derive returns the object the server would store for next, derived
// without asking it (by derivation: predict.Derive for Helm's patch,
// predict.DeriveApply for its server-side apply), or nil when the server's
// answer could differ (derivation's why, Observers.Observed) or
// --server-dry-run=all.
func (p *Planner) derive(ctx context.Context, next *manifest.Object, derivation func() (*unstructured.Unstructured, string)) *unstructured.Unstructured {
	if p.ServerDryRun == ServerDryRunAll {
		p.Stats.asked("--server-dry-run=all")
		return nil
	}
	derived, why := derivation()
	if derived == nil {
		p.Stats.asked(why)
		return nil
	}
	if who := p.Cluster.Observers.Observed(ctx, next); who != "" {
		p.Stats.asked("seen by " + who)
		return nil
	}
	if why := p.Cluster.Observers.Warns(ctx, derived, p.ServerVersion); why != "" {
		// The verdict would be the same; the server's warning would be lost.
		p.Stats.asked(why)
		return nil
	}
	p.Stats.derived()
	return derived
}

// dryRun asks the server for the predicted object and records its answer in
// u; offline, or when RBAC forbids the dry-run, it returns nil and the
// classifier falls back to the catalogue.
func (p *Planner) dryRun(ctx context.Context, c *plan.Change, u *classify.Update, next *manifest.Object, pt types.PatchType, patch []byte) (*unstructured.Unstructured, error) {
	predicted, dryErr := p.sendPatch(ctx, next, pt, patch)
	return p.answer(ctx, c, u, next, predicted, dryErr)
}

// dryRunApply is dryRun for Helm 4's server-side apply. It always asks
// without force first, to learn the apply's conflicts with other field
// managers (--force-conflicts hides them); when there are some, the object
// predicted is the one a forced apply would store, so the verdict can say
// what forcing does. When the release moves to server-side apply, Helm 4
// first hands Helm's own client-side fields to its apply (csaupgrade): a
// conflict with manager helm then does not happen, and is not returned.
// known are the conflicts found in the managed fields (decideApply): the
// unforced apply is then not sent.
func (p *Planner) dryRunApply(ctx context.Context, c *plan.Change, u *classify.Update, next *manifest.Object, toServerSide bool, known []predict.Conflict) (*unstructured.Unstructured, []predict.Conflict, error) {
	all := known
	var predicted *unstructured.Unstructured
	var dryErr error
	if len(all) == 0 {
		predicted, dryErr = p.sendApply(ctx, next, false)
		all = predict.Conflicts(dryErr)
	}
	if len(all) > 0 {
		predicted, dryErr = p.sendApply(ctx, next, true)
	}
	var conflicts []predict.Conflict
	for _, cf := range all {
		if !(toServerSide && cf.Manager == predict.FieldManager) {
			conflicts = append(conflicts, cf)
		}
	}
	predicted, err := p.answer(ctx, c, u, next, predicted, dryErr)
	return predicted, conflicts, err
}

// sendApply, sendCreate and sendPatch send a dry-run to the cluster, and
// count it.
func (p *Planner) sendApply(ctx context.Context, obj *manifest.Object, force bool) (*unstructured.Unstructured, error) {
	p.Stats.dryRun()
	return p.Cluster.DryRuns.DryRunApply(ctx, obj, force)
}

func (p *Planner) sendCreate(ctx context.Context, obj *manifest.Object) (*unstructured.Unstructured, error) {
	p.Stats.dryRun()
	return p.Cluster.DryRuns.DryRunCreate(ctx, obj)
}

func (p *Planner) sendPatch(ctx context.Context, obj *manifest.Object, pt types.PatchType, patch []byte) (*unstructured.Unstructured, error) {
	p.Stats.dryRun()
	return p.Cluster.DryRuns.DryRunPatch(ctx, obj, pt, patch)
}

// answer records the server's answer to a dry-run update in u.
func (p *Planner) answer(ctx context.Context, c *plan.Change, u *classify.Update, next *manifest.Object, predicted *unstructured.Unstructured, dryErr error) (*unstructured.Unstructured, error) {
	var notServed *live.KindNotServedError
	switch {
	case errors.Is(dryErr, live.ErrNoServer):
		return nil, nil
	case errors.As(dryErr, &notServed):
		return nil, fmt.Errorf("%s: %w", c.ID, dryErr)
	case dryErr == nil:
		u.Predicted = p.Masker.Object(predicted)
		c.Prediction = plan.PredictionServer
		return predicted, nil
	case apierrors.IsForbidden(dryErr) && strings.Contains(dryErr.Error(), "cannot patch resource"):
		c.Notes = append(c.Notes, "RBAC forbids a dry-run patch here; verdict from the catalogue: "+dryErr.Error())
	default:
		u.DryRunErr = dryErr
		c.Prediction = plan.PredictionServer
		if apierrors.IsInvalid(dryErr) {
			_, u.RecreateErr = p.sendCreate(ctx, next)
		}
	}
	return nil, nil
}

// rejectsObject reports whether the server refused the object itself (as
// opposed to being unable to answer).
func rejectsObject(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || applySchemaError(err) ||
		(apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "cannot create resource") && !strings.Contains(err.Error(), "cannot patch resource"))
}

// applySchemaError reports a server-side apply the server cannot type
// against the kind's schema (an unknown field: ".x: field not declared in
// schema"). The API server answers it as an internal error without causes,
// so its wording is all there is to match; Helm 4's upgrade fails on it.
func applySchemaError(err error) bool {
	return apierrors.IsInternalError(err) && strings.Contains(err.Error(), "failed to create typed patch object")
}

// sanitize renders a server error about obj, without values for Secrets.
func sanitize(err error, obj *unstructured.Unstructured) string {
	return classify.Sanitize(err.Error(), redact.Sensitive(obj)) // fail closed
}

// addHelmMetadata mirrors what Helm adds to every object it applies, so the
// prediction patches the same object Helm will.
func addHelmMetadata(obj *unstructured.Unstructured, release, namespace string) {
	manifest.SetHelmOwnership(obj, release, namespace)
}

// shown is an object as a plan shows it: Secret values masked, server-managed
// fields dropped.
func (p *Planner) shown(obj *unstructured.Unstructured) *unstructured.Unstructured {
	return classify.Normalize(p.Masker.Object(obj))
}
