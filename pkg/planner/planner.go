// Package planner builds a plan: it joins the last release manifest, the new
// render and the live objects, predicts each change (server-side dry-run or,
// failing that, locally) and classifies it. Plan mode sends no write to the
// cluster: every request other than a read carries dryRun=All.
package planner

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apis"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/restart"
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
	// to be restarted after Helm's upgrade (restart.Plan).
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

// Plan predicts and classifies every object of both releases. It reads as
// its passes, each in its file: split (split.go), the sanitiser's Secret
// values (secrets.go), hooks (hooks.go), the chart's CRDs (crds.go), every
// object evaluated (objects.go, each in evaluate.go), the CRD changes, the
// marks across changes (renames, budgets), what reads each ConfigMap and
// Secret (consumers.go), and the plan with its notes (notes.go).
func (p *Planner) Plan(ctx context.Context, in Input) (*plan.Plan, error) {
	in.Ignore = append(slices.Clone(in.Ignore), defaultRules()...)
	prev, next, regen, err := p.split(in)
	in.PreviousSplit = nil // its documents are garbage once split
	if err != nil {
		return nil, err
	}
	san := p.sanitizer(in, prev, next)
	hooks, err := p.hooks(in)
	if err != nil {
		return nil, err
	}
	ids := manifest.UnionIDs(prev, next)
	crds, err := p.readCRDs(in, ids, next)
	if err != nil {
		return nil, err
	}
	// What the API check needs, kept small: the sets are dropped by the
	// objects pass.
	apiObjs := apiObjectsOf(in, prev, next)
	changes, reads, err := p.objects(ctx, in, ids, prev, next, crds.kinds, regen, san)
	if err != nil {
		return nil, err
	}
	changes, crdNotes, err := p.crds(ctx, in, changes, crds)
	if err != nil {
		return nil, err
	}
	copies := sanitizeChanges(changes, san) // before fingerprints
	hookCopies := sanitizeHooks(hooks, san)
	markRenames(changes)
	p.noteBudgets(ctx, changes)
	readNotes := p.configConsumers(ctx, in.Release.Namespace, changes, insideReads(ids, reads), san)
	restart.Plan(changes, in.RestartStale)
	fingerprint(changes)
	out := &plan.Plan{
		Release:       sanitizeRelease(in.Release, san),
		ServerVersion: p.ServerVersion,
		Offline:       p.Cluster.Offline,
		Changes:       changes,
		Hooks:         hooks,
		Notes:         append(slices.Concat(in.Notes, crdNotes, readNotes), hookCopies...),
		SecretCopies:  append(copies, hookCopies...),
	}
	p.notes(out, in, apiObjs, crds.kinds)
	return out, nil
}

// ReleaseManifestName labels a release's stored manifest in errors.
func ReleaseManifestName(release string, revision int) string {
	return fmt.Sprintf("release %q revision %d manifest", release, revision)
}

// KeptPath is the reason path of an object a deletion leaves in the
// cluster because of its resource policy.
const KeptPath = "metadata.annotations[helm.sh/resource-policy]"

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
