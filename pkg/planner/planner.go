// Package planner builds a plan: it joins the last release manifest, the new
// render and the live objects, predicts each change (server-side dry-run or,
// failing that, locally) and classifies it. Plan mode sends no write to the
// cluster: every request other than a read carries dryRun=All.
package planner

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/panics"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// Helm's ownership metadata, added to every object it applies
// (helm pkg/action/validate.go setMetadataVisitor).
const (
	managedByLabel          = "app.kubernetes.io/managed-by"
	releaseNameAnnotation   = "meta.helm.sh/release-name"
	releaseNamespaceAnno    = "meta.helm.sh/release-namespace"
	resourcePolicyAnno      = "helm.sh/resource-policy"
	resourcePolicyKeepValue = "keep"
)

// Input is what the render stage hands over.
type Input struct {
	Release plan.Release
	// PreviousManifest is the manifest of the release Helm diffs against
	// (empty for an install); NextManifest the new render.
	PreviousManifest string
	NextManifest     string
	// PreviousName labels the previous manifest in errors (offline: the base
	// chart or manifest file); empty means the release revision.
	PreviousName string
	Hooks        []plan.Hook
	Notes        []string
}

// Planner builds plans against one cluster, or offline (Cluster nil) from
// two renders alone.
type Planner struct {
	Cluster       *live.Cluster
	Patcher       *predict.Patcher
	Classifier    *classify.Classifier
	ServerVersion string
	// Concurrency bounds the objects evaluated at once (GET + dry-run).
	Concurrency int
	// Masker masks Secret values in every object the plan holds (issue 10:
	// keyed per plan; a saved plan applies with the key it was made with).
	Masker *redact.Masker
	// Sanitizer receives the Secret values of the last release, the new
	// render and the live objects, and removes them from the plan's texts
	// (issue 10); the caller reuses it for what the apply prints. nil: one
	// is made for each plan.
	Sanitizer *redact.Sanitizer
}

// New returns a Planner for cluster.
func New(cluster *live.Cluster, serverVersion string) *Planner {
	return &Planner{Cluster: cluster, Patcher: predict.NewPatcher(), Classifier: classify.New(),
		ServerVersion: serverVersion, Concurrency: live.DefaultConcurrency, Masker: redact.NewMasker()}
}

// Plan predicts and classifies every object of both releases.
func (p *Planner) Plan(ctx context.Context, in Input) (*plan.Plan, error) {
	ns := in.Release.Namespace
	var scoper manifest.Scoper = manifest.StaticScoper{}
	if p.Cluster != nil {
		scoper = p.Cluster
	}
	prevName := fmt.Sprintf("release %q revision %d manifest", in.Release.Name, in.Release.CurrentRevision)
	if in.PreviousName != "" {
		prevName = in.PreviousName
	}
	prev, err := manifest.Split(prevName, in.PreviousManifest, ns, scoper)
	if err != nil {
		return nil, err
	}
	next, err := manifest.Split("new render of chart "+in.Release.Chart, in.NextManifest, ns, scoper)
	if err != nil {
		return nil, err
	}
	if p.Cluster == nil {
		// Offline, the base render stands in for the live objects, as if
		// Helm had applied it.
		for _, o := range prev.Objects() {
			addHelmMetadata(o.Obj, in.Release.Name, ns)
		}
	}
	for _, o := range next.Objects() {
		addHelmMetadata(o.Obj, in.Release.Name, ns)
	}
	// issue 10: server messages are sanitised of every Secret value.
	san := p.Sanitizer
	if san == nil {
		san = redact.NewSanitizer(p.Masker)
	}
	addSecrets(san, prev, next)
	ids := manifest.UnionIDs(prev, next)
	crdKinds := manifest.CRDKinds(next)
	var prefetched map[manifest.ObjectID]live.State
	if p.Cluster != nil {
		var objs []*manifest.Object
		for _, id := range ids {
			if o := next.Get(id); o != nil {
				objs = append(objs, o)
			} else {
				objs = append(objs, prev.Get(id))
			}
		}
		prefetched = p.Cluster.Prefetch(ctx, objs, live.MinListGroup)
	}
	// ids are sorted, so changes come out in report order.
	changes := make([]plan.Change, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(p.Concurrency, 1))
	for i, id := range ids {
		g.Go(func() (err error) {
			defer panics.Recover(&err) // issue 10: a panic here would exit 2
			changes[i], err = p.change(gctx, in.Release, prev.Get(id), next.Get(id), crdKinds, prefetched, san)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, san.Error(err)
	}
	sanitizeChanges(changes, san) // issue 10: before fingerprints
	markRenames(changes)
	for i := range changes {
		if changes[i].Destructive {
			changes[i].Fingerprint = plan.Fingerprint(changes[i])
		}
	}
	out := &plan.Plan{
		Release:       in.Release,
		ServerVersion: p.ServerVersion,
		Offline:       p.Cluster == nil,
		Changes:       changes,
		Hooks:         in.Hooks,
		Notes:         in.Notes,
	}
	if out.Offline {
		out.Notes = append(out.Notes, "offline: the base and head renders were compared without cluster access; every verdict comes from the catalogue, and live state and drift were not checked")
	}
	return out, nil
}

// change evaluates one object: prev and next are its last-release and new
// forms (either may be nil).
func (p *Planner) change(ctx context.Context, rel plan.Release, prev, next *manifest.Object, crdKinds map[schema.GroupKind]bool, prefetched map[manifest.ObjectID]live.State, san *redact.Sanitizer) (plan.Change, error) {
	obj := next
	if obj == nil {
		obj = prev
	}
	c := plan.Change{ID: obj.ID, APIVersion: obj.GVK.GroupVersion().String()}
	var liveObj *unstructured.Unstructured
	if p.Cluster == nil {
		if prev != nil {
			liveObj = prev.Obj
		}
	} else {
		state, ok := prefetched[obj.ID]
		if !ok {
			state = p.Cluster.Get(ctx, obj)
		}
		if state.Err != nil {
			return c, state.Err
		}
		liveObj = state.Obj
		san.Add(liveObj) // issue 10: values only the cluster holds
		if liveObj != nil {
			c.LiveResourceVersion = liveObj.GetResourceVersion()
		}
	}
	switch {
	case next == nil:
		p.deletion(&c, liveObj)
	case liveObj == nil:
		p.creation(ctx, &c, next, crdKinds)
	default:
		if err := p.update(ctx, &c, rel, prev, next, liveObj); err != nil {
			return c, err
		}
	}
	return c, nil
}

// destructiveDeletes are kinds whose deletion loses data or everything in
// them (GUIDE §4); a StatefulSet's default cascade stops all its pods at once.
var destructiveDeletes = map[schema.GroupKind]string{
	{Kind: "PersistentVolumeClaim"}:                                   "deleting a PersistentVolumeClaim deletes its volume's data (reclaimPolicy Delete)",
	{Kind: "PersistentVolume"}:                                        "deleting a PersistentVolume can delete the underlying storage",
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: "deleting a CRD deletes every custom resource of that kind",
	{Kind: "Namespace"}:                                               "deleting a Namespace deletes everything in it",
	{Group: "apps", Kind: "StatefulSet"}:                              "deleting a StatefulSet stops all its pods at once",
}

func (p *Planner) deletion(c *plan.Change, liveObj *unstructured.Unstructured) {
	if liveObj == nil {
		c.Action = plan.ActionNoop
		c.Notes = append(c.Notes, "removed from the chart; already absent from the cluster")
		return
	}
	c.Before = classify.Normalize(p.Masker.Object(liveObj))
	if liveObj.GetAnnotations()[resourcePolicyAnno] == resourcePolicyKeepValue {
		c.Action = plan.ActionNoop
		c.Reasons = []plan.Reason{{Path: "metadata.annotations[helm.sh/resource-policy]", Source: plan.SourceHelm,
			Message: "removed from the chart but kept (helm.sh/resource-policy: keep): Helm leaves it in the cluster, no longer managed by the release"}}
		return
	}
	c.Action = plan.ActionDelete
	gk := schema.GroupKind{Group: c.ID.Group, Kind: c.ID.Kind}
	msg, destructive := destructiveDeletes[gk]
	if !destructive {
		msg = "removed from the chart: Helm deletes it"
	}
	c.Destructive = destructive
	c.Reasons = []plan.Reason{{Message: msg, Source: plan.SourceHelm}}
}

func (p *Planner) creation(ctx context.Context, c *plan.Change, next *manifest.Object, crdKinds map[schema.GroupKind]bool) {
	c.Action = plan.ActionCreate
	if p.Cluster == nil {
		c.After = classify.Normalize(p.Masker.Object(next.Obj))
		return
	}
	ri, _, err := p.Cluster.Resource(next.GVK, next.ID.Namespace)
	if err != nil {
		c.After = classify.Normalize(p.Masker.Object(next.Obj))
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
	}
	created, err := predict.DryRunCreate(ctx, ri, next.Obj)
	if err != nil {
		if rejectsObject(err) {
			c.Class = plan.ClassInvalid
			c.Destructive, c.Blocking = true, true
			c.Reasons = []plan.Reason{{Message: "the server rejects the new object: " + sanitize(err, next.Obj), Source: plan.SourceServer}}
		} else {
			c.Notes = append(c.Notes, "not validated by the server: "+sanitize(err, next.Obj))
		}
		created = next.Obj
	}
	c.After = classify.Normalize(p.Masker.Object(created))
}

func (p *Planner) update(ctx context.Context, c *plan.Change, rel plan.Release, prev, next *manifest.Object, liveObj *unstructured.Unstructured) error {
	c.Action = plan.ActionUpdate
	secret := redact.Sensitive(liveObj) // issue 10: fail closed
	if prev == nil {
		if owner := liveObj.GetAnnotations()[releaseNameAnnotation]; owner != rel.Name ||
			liveObj.GetAnnotations()[releaseNamespaceAnno] != rel.Namespace {
			c.Class = plan.ClassInvalid
			c.Destructive, c.Blocking = true, true
			c.Reasons = []plan.Reason{{Path: "metadata.annotations[meta.helm.sh/release-name]", Source: plan.SourceHelm,
				Message: fmt.Sprintf("exists in the cluster but is not owned by release %s/%s (owner %q): Helm refuses to adopt it", rel.Namespace, rel.Name, owner)}}
			c.Before = classify.Normalize(p.Masker.Object(liveObj))
			return nil
		}
	}
	var original *unstructured.Unstructured
	if prev != nil {
		original = prev.Obj
	}
	patch, pt, err := p.Patcher.Patch(original, next.Obj, liveObj)
	if err != nil {
		return fmt.Errorf("%s: building the patch Helm would send: %w", c.ID, err)
	}
	c.Before = classify.Normalize(p.Masker.Object(liveObj))
	if predict.Empty(patch) {
		// Helm sends nothing for an empty patch.
		c.Action = plan.ActionNoop
		c.After = c.Before
		c.Drift = classify.Drift(original, liveObj, next.Obj, liveObj)
		return nil
	}
	local, err := p.Patcher.ApplyLocal(liveObj, patch, pt)
	if err != nil {
		return fmt.Errorf("%s: %w", c.ID, err)
	}
	u := classify.Update{GroupKind: schema.GroupKind{Group: c.ID.Group, Kind: c.ID.Kind},
		Live: p.Masker.Object(liveObj), Local: p.Masker.Object(local), Secret: secret,
		Original: p.Masker.Object(original), Target: p.Masker.Object(next.Obj)}
	predicted, err := p.dryRun(ctx, c, &u, next, pt, patch)
	if err != nil {
		return err
	}
	v := p.Classifier.Classify(u)
	if v.Noop {
		c.Action = plan.ActionNoop
	}
	c.Class, c.Reasons, c.Rollout = v.Class, v.Reasons, v.Rollout
	c.Destructive = v.Class == plan.ClassRecreateRequired || v.Class == plan.ClassInvalid
	c.Blocking = v.Class == plan.ClassInvalid
	after := predicted
	if after == nil {
		after = u.Backfill()
	}
	c.After = classify.Normalize(p.Masker.Object(after))
	c.Drift = classify.Drift(original, liveObj, next.Obj, after)
	return nil
}

// dryRun asks the server for the predicted object and records its answer in
// u; offline, or when RBAC forbids the dry-run, it returns nil and the
// classifier falls back to the catalogue.
func (p *Planner) dryRun(ctx context.Context, c *plan.Change, u *classify.Update, next *manifest.Object, pt types.PatchType, patch []byte) (*unstructured.Unstructured, error) {
	if p.Cluster == nil {
		return nil, nil
	}
	ri, _, err := p.Cluster.Resource(next.GVK, next.ID.Namespace)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.ID, err)
	}
	predicted, dryErr := predict.DryRunPatch(ctx, ri, c.ID.Name, pt, patch)
	switch {
	case dryErr == nil:
		u.Predicted = p.Masker.Object(predicted)
		return predicted, nil
	case apierrors.IsForbidden(dryErr) && strings.Contains(dryErr.Error(), "cannot patch resource"):
		c.Notes = append(c.Notes, "RBAC forbids a dry-run patch here; verdict from the catalogue: "+dryErr.Error())
	default:
		u.DryRunErr = dryErr
		if apierrors.IsInvalid(dryErr) {
			_, u.RecreateErr = predict.DryRunCreate(ctx, ri, next.Obj)
		}
	}
	return nil, nil
}

// rejectsObject reports whether the server refused the object itself (as
// opposed to being unable to answer).
func rejectsObject(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) ||
		(apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "cannot create resource"))
}

// sanitize renders a server error about obj, without values for Secrets.
func sanitize(err error, obj *unstructured.Unstructured) string {
	return classify.Sanitize(err.Error(), redact.Sensitive(obj)) // issue 10: fail closed
}

// addHelmMetadata mirrors what Helm adds to every object it applies, so the
// prediction patches the same object Helm will.
func addHelmMetadata(obj *unstructured.Unstructured, release, namespace string) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[managedByLabel] = "Helm"
	obj.SetLabels(labels)
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[releaseNameAnnotation] = release
	ann[releaseNamespaceAnno] = namespace
	obj.SetAnnotations(ann)
}
