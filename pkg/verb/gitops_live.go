package verb

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apis"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gitops"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// argoApplier is Argo CD's sync, tracking with t, as the planner
// predicts it.
func argoApplier(t gitops.ArgoTracking, sync gitops.ArgoSync) *planner.Applier {
	a := &planner.Applier{
		Adopted: "in the cluster without the Application's tracking or last-applied configuration: Argo CD applies over it (compared with the live object alone)",
		Deletes: "no longer rendered: Argo CD prunes it (syncPolicy.automated.prune)",
		Takes:   "Argo CD's server-side apply forces conflicts: it takes the field, and " + gitops.ArgoFieldManager + " becomes its owner"}
	a.Mark = func(obj *unstructured.Unstructured, id manifest.ObjectID) { t.Mark(obj, gitops.ArgoObject(id), sync) }
	a.Release = func(rel plan.Release, obj *unstructured.Unstructured) plan.Release {
		o := sync.ForObject(obj)
		rel.ApplyMethod, rel.ForceConflicts, rel.ForceReplace = plan.ApplyMethodCSA, false, o.Replace
		if o.ServerSide {
			rel.ApplyMethod, rel.ForceConflicts = plan.ApplyMethodSSA, true
		}
		return rel
	}
	a.Kept = sync.Kept
	return a
}

// planArgoLive plans an Application's head against its live objects, in
// the cluster of the kubeconfig: Argo CD stores no Helm release, so the
// head is rendered as helm template renders it and compared, object by
// object, with what Argo CD's sync compares it with: the object's
// last-applied configuration (the three-way kubectl apply makes) when it
// has one, else the base render's object; with server-side apply, the
// server's dry-run of Argo CD's apply. Objects the Application tracks that
// the head no longer renders are pruned or left as its syncPolicy says.
// It sends no write but dry-runs.
func (c *Config) planArgoLive(ctx context.Context, req GitOpsRequest, ch gitops.Change, app *gitops.Doc, chart string, opts render.Options, base *OfflineBase) (*Planned, error) {
	h, sync := ch.Head, gitops.ArgoSyncOf(app)
	rc := *c
	rc.Namespace, rc.StorageNamespace, rc.Helm, rc.Cluster = h.Namespace, "", nil, nil
	ctx, cancel := context.WithTimeout(ctx, opts.TimeLimit())
	defer cancel()
	defer rc.boundByContext(ctx)()
	res, err := rc.renderArgoHead(ctx, h.Name, chart, &opts, base)
	if err != nil {
		return nil, err
	}
	rules, err := req.Rules.ForChart(chart)
	if err != nil {
		return nil, err
	}
	// Argo CD tracks by the Application's name, not the release name.
	found, err := rc.argoLive(ctx, h.Object.Namespace, h.Object.Name, res)
	if err != nil {
		return nil, err
	}
	in := found.plannerInput(res, opts.SkipCRDs, sync)
	in.Ignore = rules
	minor, _ := apis.ParseMinor(rc.ServerVersion)
	in.APIs = apis.ForCluster(rc.Cluster.Mapper, minor)
	addHookSecrets(rc.Sanitizer, res)
	pl := rc.planner(planner.Live{Cluster: rc.Cluster, Observers: live.NewObservers(rc.Cluster), Schemas: live.NewSchemas(rc.Cluster), FieldManager: gitops.ArgoFieldManager}.Parts(), rc.ServerVersion)
	if sync.ServerSide {
		// The local decision of an apply is Helm's field manager's; Argo
		// CD's is asked of the server, every one.
		pl.ServerDryRun = planner.ServerDryRunAll
	}
	c.progress("Planning %s against its live objects", ch.Ref)
	p, err := pl.Plan(ctx, in)
	if err != nil {
		return nil, err
	}
	c.warnSecretCopies(p)
	// Argo CD keeps no Helm release: no revision to name.
	p.Release.SyncedBy = fmt.Sprintf("Argo CD Application %s/%s", h.Object.Namespace, h.Object.Name)
	p.Release.Revision, p.Release.CurrentRevision = 0, 0
	if err := rc.argoNamespace(ctx, p, app, h.Namespace, sync, found.head[manifest.ObjectID{Kind: "Namespace", Name: h.Namespace}]); err != nil {
		return nil, err
	}
	p.Notes = append(p.Notes, gitOpsNotes(ch)...)
	p.Notes = append(p.Notes, found.notes(ch, sync, in.Applier)...)
	return &Planned{Plan: p, Rendered: res, ChartRef: chart, Render: opts}, nil
}

// renderArgoHead connects c and renders the head's chart as Argo CD does
// (helm template, against the cluster's version unless opts names one),
// over the base render.
func (c *Config) renderArgoHead(ctx context.Context, name, chart string, opts *render.Options, base *OfflineBase) (*render.Result, error) {
	if err := c.Stage("connect", func() error { return c.Connect(ctx) }); err != nil {
		return nil, fmt.Errorf("--live: %w", err)
	}
	if opts.KubeVersion == "" {
		opts.KubeVersion = c.ServerVersion // the target is the cluster
	}
	target, err := opts.OfflineTarget()
	if err != nil {
		return nil, err
	}
	c.progress("Rendering %s (head) as Argo CD does", chart)
	res, err := render.RenderOffline(ctx, c.Settings, name, render.Base{Chart: base.Chart, Values: base.Values, PostRender: base.PostRender}, chart, *opts, target)
	if err != nil {
		return nil, c.offlineFailed(err)
	}
	return res, nil
}

// plannerInput hands the render to the planner as Argo CD's sync applies
// it: compared with the live objects' last-applied configurations and the
// base render, applied as sync says.
func (f *argoFound) plannerInput(res *render.Result, skipCRDs bool, sync gitops.ArgoSync) planner.Input {
	in := plannerInput(res, skipCRDs)
	in.PreviousManifest, in.PreviousName = f.last(sync), "the live objects' last-applied configurations and the base render"
	in.Applier = argoApplier(f.tracking, sync)
	in.Release.ApplyMethod = plan.ApplyMethodCSA
	if sync.ServerSide {
		in.Release.ApplyMethod, in.Release.ForceConflicts = plan.ApplyMethodSSA, true
	}
	in.Release.ForceReplace = sync.Replace
	return in
}

// argoFound is what the live plan of an Application read of the cluster.
type argoFound struct {
	tracking gitops.ArgoTracking
	// live are the objects the Application tracks and the objects of the
	// head's identities, by identity; base the base render's objects.
	live map[manifest.ObjectID]*unstructured.Unstructured
	// order is live's identities, sorted.
	order []manifest.ObjectID
	base  map[manifest.ObjectID]string
	head  map[manifest.ObjectID]bool
	// overrides are the head's objects with a sync-options annotation.
	overrides map[manifest.ObjectID]*unstructured.Unstructured
	// failed are the kinds whose LIST was refused, and why.
	failed []string
	// lastApplied and fromBase count the objects the plan compared with
	// their last-applied configuration and with the base render.
	lastApplied, fromBase int
}

// argoLive reads the live objects of the Application app (of namespace
// appNamespace) among the kinds its base and head renders name, in the
// release namespace and each namespace the renders name (cluster-scoped
// kinds everywhere): those it tracks, and those of the head's identities.
func (c *Config) argoLive(ctx context.Context, appNamespace, app string, res *render.Result) (*argoFound, error) {
	f := &argoFound{tracking: gitops.ArgoTracking{App: app, Namespace: res.Next.Namespace}, live: map[manifest.ObjectID]*unstructured.Unstructured{},
		base: map[manifest.ObjectID]string{}, head: map[manifest.ObjectID]bool{},
		overrides: map[manifest.ObjectID]*unstructured.Unstructured{}}
	kinds, err := f.readRenders(res, c.Cluster)
	if err != nil {
		return nil, err
	}
	// gitops-engine's GetManagedLiveObjs takes the tracked objects without
	// owner references (a CronJob's Job is its CronJob's), and the head's
	// objects whatever they carry.
	keep := func(m live.ItemMeta) bool {
		label, instance := f.tracking.Tracks(gitops.ArgoObject(m.ID), m.Labels, m.Annotations, appNamespace)
		return (label || instance != "") && !m.Owned || f.head[m.ID]
	}
	var ids []manifest.ObjectID
	var objs []*unstructured.Unstructured
	var marks []gitops.ArgoMark
	for _, ns := range kinds.Namespaces() {
		gvks := kinds.Listed(ns)
		inv := c.Cluster.ReadInventory(redact.WithReadsSanitized(ctx), gvks, ns, live.DefaultConcurrency, keep)
		for _, gvk := range gvks {
			if err := inv.Failed(gvk.GroupKind()); err != nil {
				f.failed = append(f.failed, c.Sanitizer.Text(err.Error(), redact.RecordLimit))
			}
		}
		for _, id := range inv.IDs() {
			st := inv.State(id).Decode()
			if st.Err != nil {
				return nil, st.Err
			}
			if st.Obj == nil {
				continue
			}
			c.Sanitizer.Add(st.Obj)
			label, instance := f.tracking.Tracks(gitops.ArgoObject(id), st.Obj.GetLabels(), st.Obj.GetAnnotations(), appNamespace)
			ids, objs, marks = append(ids, id), append(objs, st.Obj), append(marks, gitops.ArgoMark{Label: label, Instance: instance})
		}
	}
	sort.Strings(f.failed)
	for i, tracked := range f.tracking.Settle(marks) {
		if tracked || f.head[ids[i]] {
			f.live[ids[i]], f.order = objs[i], append(f.order, ids[i])
		}
	}
	sort.Slice(f.order, func(i, j int) bool { return f.order[i].Less(f.order[j]) })
	return f, nil
}

// readRenders notes the head's and the base's objects in f, and returns
// the kinds and namespaces they name.
func (f *argoFound) readRenders(res *render.Result, scoper manifest.Scoper) (*gitops.ArgoKinds, error) {
	kinds := gitops.NewArgoKinds(res.Next.Namespace)
	head, err := manifest.Split("the head render", res.Next.Manifest, res.Next.Namespace, scoper)
	if err != nil {
		return nil, err
	}
	for _, o := range head.Objects() {
		f.head[o.ID] = true
		if err := o.Load(); err != nil {
			return nil, err
		}
		if len(gitops.ArgoObjectOptions(o.Obj)) > 0 {
			f.overrides[o.ID] = o.Obj
		}
		kinds.Add(o.GVK, o.ID.Namespace)
	}
	if res.Previous == nil {
		return kinds, nil
	}
	prev, err := manifest.Split("the base render", res.Previous.Manifest, res.Next.Namespace, scoper)
	if err != nil {
		return nil, err
	}
	for _, o := range prev.Objects() {
		if err := o.Load(); err != nil {
			return nil, err
		}
		data, err := sigsyaml.Marshal(o.Obj.Object)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.ID, err)
		}
		f.base[o.ID] = string(data)
		kinds.Add(o.GVK, o.ID.Namespace)
	}
	return kinds, nil
}

// syncOf is the sync of the head's object id: the Application's, or its
// annotation's override.
func (f *argoFound) syncOf(sync gitops.ArgoSync, id manifest.ObjectID) gitops.ArgoSync {
	if o := f.overrides[id]; o != nil {
		return sync.ForObject(o)
	}
	return sync
}

// last is the manifest the plan takes for the last applied: for each live
// object of the head or tracked, its last-applied configuration
// (client-side apply) when it has one, else its base render; a tracked
// object neither holds is named by its identity alone (it can only be
// pruned or left).
func (f *argoFound) last(sync gitops.ArgoSync) string {
	var b strings.Builder
	for _, id := range f.order {
		obj := f.live[id]
		doc := ""
		applied := obj.GetAnnotations()[redact.LastAppliedAnnotation]
		s := f.syncOf(sync, id)
		switch {
		case applied != "" && !s.ServerSide && !s.Replace:
			doc = applied // JSON, which YAML reads
			f.lastApplied++
		case f.base[id] != "":
			doc = f.base[id]
			f.fromBase++
		case !f.head[id]:
			doc = fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata: {name: %q, namespace: %q}\n", obj.GetAPIVersion(), obj.GetKind(), obj.GetName(), obj.GetNamespace())
		default:
			continue // adopted: compared with the live object alone
		}
		b.WriteString("---\n")
		b.WriteString(doc)
		b.WriteString("\n")
	}
	return b.String()
}

// notes say what the Application's live plan compared, and what it did
// not check.
func (f *argoFound) notes(ch gitops.Change, sync gitops.ArgoSync, applier *planner.Applier) []string {
	h := ch.Head
	var tracked []string
	if f.tracking.Label {
		tracked = append(tracked, "label "+gitops.ArgoInstanceLabel+"="+f.tracking.App)
	}
	if f.tracking.Annotation {
		tracked = append(tracked, "annotation "+gitops.ArgoTrackingID)
	}
	var how string
	switch {
	case sync.Replace:
		how = "Replace=true: Argo CD replaces (PUT) each object that exists; the server's dry-run of each PUT, compared with the base render"
	case sync.ServerSide:
		how = "ServerSideApply=true: the server's dry-run of Argo CD's server-side apply (field manager " + gitops.ArgoFieldManager + ", forcing conflicts as Argo CD does), compared with the base render"
	default:
		how = fmt.Sprintf("client-side apply, as Argo CD's sync runs kubectl apply: three-way with each object's last-applied configuration (%d object(s)); two-way with the base render and the live object where there is none (%d object(s))", f.lastApplied, f.fromBase)
	}
	notes := []string{
		fmt.Sprintf("--live: planned against the live objects of Application %s in namespace %s, tracked by %s: %s", f.tracking.App, h.Namespace, strings.Join(tracked, " and "), how),
		"--live: Argo CD itself was not run: the plan follows its sync's rules (rendering as helm template, apply, tracking, prune); sync waves, hooks as Argo CD orders them, ignoreDifferences and health are not planned; live objects were looked for among the kinds the base and head renders name, in the destination namespace and the namespaces the renders name",
	}
	for _, id := range f.order {
		if o := f.overrides[id]; o != nil && f.syncOf(sync, id) != sync {
			notes = append(notes, fmt.Sprintf("%s: %s %q overrides the Application's syncOptions: %s", id, gitops.ArgoSyncOptions, o.GetAnnotations()[gitops.ArgoSyncOptions], f.syncOf(sync, id).Method()))
		}
	}
	if sync.Prune {
		notes = append(notes, "syncPolicy.automated.prune: Argo CD deletes the tracked objects the head no longer renders")
	} else {
		notes = append(notes, "prune is off: the tracked objects the head no longer renders are left in the cluster, OutOfSync")
	}
	// What the applier leaves is a no-op, which reports do not show: each
	// is named here.
	for _, id := range f.order {
		if f.head[id] {
			continue
		}
		if why := applier.Kept(f.live[id]); why != "" {
			notes = append(notes, id.String()+": "+why)
		}
	}
	for _, why := range f.failed {
		notes = append(notes, "--live: a LIST was refused, so objects of its kind that the Application tracks and the head drops are not seen: "+why)
	}
	return notes
}
