package verb

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubectlutil "k8s.io/kubectl/pkg/util"
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

// Argo CD's names and rules, as its source has them (argoproj/argo-cd
// common/common.go, util/argo/resource_tracking.go; argoproj/gitops-engine
// pkg/sync/common/types.go, pkg/sync/sync_context.go pruneObject,
// pkg/utils/kube/resource_ops.go newApplyOptionsCommon):
//   - objects are tracked by the label app.kubernetes.io/instance=<app>
//     (Argo CD ≤ 2.x's default) or the annotation
//     argocd.argoproj.io/tracking-id: <app>:<group>/<kind>:<namespace>/<name>
//     (BuildAppInstanceValue; Argo CD 3.x's default);
//   - a sync applies with kubectl's apply code (client-side, keeping
//     kubectl.kubernetes.io/last-applied-configuration) unless
//     ServerSideApply=true: then server-side as field manager
//     argocd-controller (ArgoCDSSAManager), with ForceConflicts; Replace=true
//     replaces (PUT) instead, whatever ServerSideApply says (applyObject);
//   - an object no longer rendered is pruned only with prune (for an
//     automated sync, syncPolicy.automated.prune), and never when it carries
//     argocd.argoproj.io/sync-options: Prune=false (SyncOptionDisablePrune).
const (
	argoInstanceLabel = "app.kubernetes.io/instance"
	argoTrackingID    = "argocd.argoproj.io/tracking-id"
	argoSyncOptions   = "argocd.argoproj.io/sync-options"
	argoFieldManager  = "argocd-controller"
)

// argoSync is how an Application's syncPolicy says Argo CD applies it.
type argoSync struct {
	ServerSide, Replace, Prune bool
	// CreateNamespace: Argo CD creates the destination namespace when it
	// is missing and the render does not hold it.
	CreateNamespace bool
}

// argoSyncOf reads spec.syncPolicy of the Application d: its syncOptions
// and automated.prune.
func argoSyncOf(d *gitops.Doc) argoSync {
	var s argoSync
	if d == nil {
		return s
	}
	opts, _, _ := unstructured.NestedStringSlice(d.Object, "spec", "syncPolicy", "syncOptions")
	s.ServerSide = hasArgoOption(opts, "ServerSideApply=true")
	s.Replace = hasArgoOption(opts, "Replace=true")
	s.CreateNamespace = hasArgoOption(opts, "CreateNamespace=true")
	// gitops-engine's applyObject replaces before it considers a
	// server-side apply.
	s.ServerSide = s.ServerSide && !s.Replace
	s.Prune, _, _ = unstructured.NestedBool(d.Object, "spec", "syncPolicy", "automated", "prune")
	return s
}

// argoObjectOptions are the options of obj's sync-options annotation,
// split as gitops-engine's HasAnnotationOption splits them (pkg/sync/
// resource/annotations.go: on commas, spaces trimmed).
func argoObjectOptions(obj *unstructured.Unstructured) []string {
	v := obj.GetAnnotations()[argoSyncOptions]
	if v == "" {
		return nil
	}
	opts := strings.Split(v, ",")
	for i := range opts {
		opts[i] = strings.TrimSpace(opts[i])
	}
	return opts
}

// hasArgoOption reports whether opts (syncOptions, or an annotation's
// options) hold opt, compared exactly as Argo CD's SyncOptions.HasOption
// compares an Application's: only the annotation's options are trimmed
// (argoObjectOptions).
func hasArgoOption(opts []string, opt string) bool {
	for _, o := range opts {
		if o == opt {
			return true
		}
	}
	return false
}

// forObject is the sync of the rendered object obj: its sync-options
// annotation overrides the Application's syncOptions as gitops-engine's
// applyObject reads it (argoproj/argo-cd gitops-engine/pkg/sync/
// sync_context.go): Replace=true replaces it whatever the Application
// says; ServerSideApply=false applies it client-side and
// ServerSideApply=true server-side (shouldUseServerSideApply); a replace
// still wins over a server-side apply.
func (s argoSync) forObject(obj *unstructured.Unstructured) argoSync {
	opts := argoObjectOptions(obj)
	if len(opts) == 0 {
		return s
	}
	s.Replace = s.Replace || hasArgoOption(opts, "Replace=true")
	switch {
	case hasArgoOption(opts, "ServerSideApply=false"):
		s.ServerSide = false
	case hasArgoOption(opts, "ServerSideApply=true"):
		s.ServerSide = true
	}
	s.ServerSide = s.ServerSide && !s.Replace
	return s
}

// method names how sync applies an object, for the plan's notes.
func (s argoSync) method() string {
	switch {
	case s.Replace:
		return "replaced (PUT)"
	case s.ServerSide:
		return "applied server-side as " + argoFieldManager
	}
	return "applied client-side (kubectl apply)"
}

// docOf is the document of the object ref in side, nil when none.
func docOf(side *gitops.Side, ref gitops.ObjectRef) *gitops.Doc {
	for _, d := range side.Docs {
		if d.Ref == ref {
			return d
		}
	}
	return nil
}

// argoTracking is how Argo CD marks the objects of one Application.
type argoTracking struct {
	// App is the Application's name; Instance the name its tracking
	// annotation gives it as found on a live object (<namespace>_<app> for
	// an Application outside Argo CD's namespace), "" for App.
	App, Instance string
	// Namespace is the destination namespace, which Argo CD's
	// SetAppInstance writes in a cluster-scoped object's annotation.
	Namespace string
	// Label and Annotation say which marks its tracked live objects carry
	// (both for annotation+label); neither when none is live. With
	// Annotation, the label alone tracks nothing.
	Label, Annotation bool
}

// tracks reports whether Argo CD counts the object m as the Application's
// (of namespace appNamespace): by its label, or by its tracking annotation
// naming the object itself (a copied annotation names another object and
// does not count), with the instance name the annotation gives.
func (t argoTracking) tracks(m live.ItemMeta, appNamespace string) (label bool, instance string) {
	label = m.Labels[argoInstanceLabel] == t.App
	id := m.Annotations[argoTrackingID]
	if id == "" {
		return label, ""
	}
	for _, app := range []string{t.App, appNamespace + "_" + t.App} {
		if argoNamesItself(id, app, m.ID) {
			return label, app
		}
	}
	return label, ""
}

// argoNamesItself reports whether the tracking annotation value names the
// object id of app, as Argo CD's isSelfReferencedObj compares them: the
// namespace it names is not compared for a cluster-scoped object (it is
// the destination namespace of whichever Application wrote it).
func argoNamesItself(value, app string, id manifest.ObjectID) bool {
	rest, ok := strings.CutPrefix(value, fmt.Sprintf("%s:%s/%s:", app, id.Group, id.Kind))
	ns, name, ok2 := strings.Cut(rest, "/")
	return ok && ok2 && name == id.Name && (ns == id.Namespace || id.Namespace == "")
}

// argoTrackingValue is the tracking annotation of the object id of app
// synced into namespace: a cluster-scoped object names that namespace.
func argoTrackingValue(app, namespace string, id manifest.ObjectID) string {
	if id.Namespace != "" {
		namespace = id.Namespace
	}
	return fmt.Sprintf("%s:%s/%s:%s/%s", app, id.Group, id.Kind, namespace, id.Name)
}

// argoApplier is Argo CD's sync as the planner predicts it.
func argoApplier(t argoTracking, sync argoSync) *planner.Applier {
	a := &planner.Applier{
		Adopted: "in the cluster without the Application's tracking or last-applied configuration: Argo CD applies over it (compared with the live object alone)",
		Deletes: "no longer rendered: Argo CD prunes it (syncPolicy.automated.prune)",
		Takes:   "Argo CD's server-side apply forces conflicts: it takes the field, and " + argoFieldManager + " becomes its owner"}
	a.Mark = func(obj *unstructured.Unstructured, id manifest.ObjectID) {
		if md, ok := obj.Object["metadata"].(map[string]interface{}); ok {
			obj.Object["metadata"] = maps.Clone(md) // may be shared with another form (manifest.Parsed)
		}
		if t.Label || !t.Annotation {
			labels := obj.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			labels[argoInstanceLabel] = t.App
			obj.SetLabels(labels)
		}
		if t.Annotation {
			instance := t.Instance
			if instance == "" {
				instance = t.App
			}
			setAnnotation(obj, argoTrackingID, argoTrackingValue(instance, t.Namespace, id))
		}
		if o := sync.forObject(obj); !o.ServerSide && !o.Replace {
			// kubectl apply's own annotation, computed by its own code.
			if data, err := kubectlutil.GetModifiedConfiguration(obj, false, unstructured.UnstructuredJSONScheme); err == nil {
				setAnnotation(obj, redact.LastAppliedAnnotation, string(data))
			}
		}
	}
	a.Release = func(rel plan.Release, obj *unstructured.Unstructured) plan.Release {
		o := sync.forObject(obj)
		rel.ApplyMethod, rel.ForceConflicts, rel.ForceReplace = plan.ApplyMethodCSA, false, o.Replace
		if o.ServerSide {
			rel.ApplyMethod, rel.ForceConflicts = plan.ApplyMethodSSA, true
		}
		return rel
	}
	a.Kept = func(liveObj *unstructured.Unstructured) string {
		// pruneObject reads the live object's annotation.
		if hasArgoOption(argoObjectOptions(liveObj), "Prune=false") {
			return "no longer rendered: left in the cluster, OutOfSync (" + argoSyncOptions + ": Prune=false)"
		}
		if !sync.Prune {
			return "no longer rendered: left in the cluster, OutOfSync (prune is off: Argo CD prunes only with syncPolicy.automated.prune)"
		}
		return ""
	}
	return a
}

// setAnnotation sets obj's annotation k to v.
func setAnnotation(obj *unstructured.Unstructured, k, v string) {
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[k] = v
	obj.SetAnnotations(a)
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
	h, sync := ch.Head, argoSyncOf(app)
	rc := *c
	rc.Namespace, rc.StorageNamespace, rc.Helm, rc.Cluster = h.Namespace, "", nil, nil
	ctx, cancel := context.WithTimeout(ctx, opts.TimeLimit())
	defer cancel()
	defer rc.boundByContext(ctx)()
	if err := rc.Stage("connect", func() error { return rc.Connect(ctx) }); err != nil {
		return nil, fmt.Errorf("--live: %w", err)
	}
	if opts.KubeVersion == "" {
		opts.KubeVersion = rc.ServerVersion // the target is the cluster
	}
	target, err := opts.OfflineTarget()
	if err != nil {
		return nil, err
	}
	c.progress("Rendering %s (head) as Argo CD does", chart)
	res, err := render.RenderOffline(ctx, rc.Settings, h.Name, render.Base{Chart: base.Chart, Values: base.Values, PostRender: base.PostRender}, chart, opts, target)
	if err != nil {
		return nil, rc.offlineFailed(err)
	}
	rules, err := req.Rules.Load(chart)
	if err != nil {
		return nil, err
	}
	in := plannerInput(res, opts.SkipCRDs)
	in.Ignore = rules
	// Argo CD tracks by the Application's name, not the release name.
	found, err := rc.argoLive(ctx, h.Object.Namespace, h.Object.Name, res)
	if err != nil {
		return nil, err
	}
	in.PreviousManifest, in.PreviousName = found.last(sync), "the live objects' last-applied configurations and the base render"
	in.Applier = argoApplier(found.tracking, sync)
	in.Release.ApplyMethod = plan.ApplyMethodCSA
	if sync.ServerSide {
		in.Release.ApplyMethod, in.Release.ForceConflicts = plan.ApplyMethodSSA, true
	}
	in.Release.ForceReplace = sync.Replace
	minor, _ := apis.ParseMinor(rc.ServerVersion)
	in.APIs = apis.ForCluster(rc.Cluster.Mapper, minor)
	addHookSecrets(rc.Sanitizer, res)
	pl := rc.planner(planner.Live{Cluster: rc.Cluster, Observers: live.NewObservers(rc.Cluster), Schemas: live.NewSchemas(rc.Cluster), FieldManager: argoFieldManager}.Parts(), rc.ServerVersion)
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

// argoFound is what the live plan of an Application read of the cluster.
type argoFound struct {
	tracking argoTracking
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
	f := &argoFound{tracking: argoTracking{App: app, Namespace: res.Next.Namespace}, live: map[manifest.ObjectID]*unstructured.Unstructured{},
		base: map[manifest.ObjectID]string{}, head: map[manifest.ObjectID]bool{},
		overrides: map[manifest.ObjectID]*unstructured.Unstructured{}}
	head, err := manifest.Split("the head render", res.Next.Manifest, res.Next.Namespace, c.Cluster)
	if err != nil {
		return nil, err
	}
	kinds := argoKinds{gvks: map[schema.GroupKind]schema.GroupVersionKind{}, namespaced: map[schema.GroupKind]bool{},
		namespaces: map[string]bool{res.Next.Namespace: true}}
	for _, o := range head.Objects() {
		f.head[o.ID] = true
		if err := o.Load(); err != nil {
			return nil, err
		}
		if len(argoObjectOptions(o.Obj)) > 0 {
			f.overrides[o.ID] = o.Obj
		}
		kinds.add(o)
	}
	if res.Previous != nil {
		prev, err := manifest.Split("the base render", res.Previous.Manifest, res.Next.Namespace, c.Cluster)
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
			kinds.add(o)
		}
	}
	// gitops-engine's GetManagedLiveObjs takes the tracked objects without
	// owner references (a CronJob's Job is its CronJob's), and the head's
	// objects whatever they carry.
	keep := func(m live.ItemMeta) bool {
		label, instance := f.tracking.tracks(m, appNamespace)
		return (label || instance != "") && !m.Owned || f.head[m.ID]
	}
	type kept struct {
		id       manifest.ObjectID
		obj      *unstructured.Unstructured
		label    bool
		instance string
	}
	var found []kept
	for _, ns := range kinds.sortedNamespaces() {
		gvks := kinds.listed(ns, res.Next.Namespace)
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
			label, instance := f.tracking.tracks(live.ItemMeta{ID: id, Labels: st.Obj.GetLabels(), Annotations: st.Obj.GetAnnotations()}, appNamespace)
			found = append(found, kept{id, st.Obj, label, instance})
			if instance != "" {
				f.tracking.Annotation, f.tracking.Instance = true, instance
			}
		}
	}
	sort.Strings(f.failed)
	// Under annotation tracking (annotation or annotation+label) Argo CD's
	// GetAppName reads the annotation alone: the label, which most charts
	// set to the release name, does not make an object the Application's.
	// The method is the one the live objects show: the annotation when one
	// carries it naming itself, else the label.
	for _, k := range found {
		tracked := k.label
		if f.tracking.Annotation {
			tracked = k.instance != ""
		}
		// Label: the objects it tracks carry the label too (label, or
		// annotation+label tracking): the head's get it.
		f.tracking.Label = f.tracking.Label || tracked && k.label
		if tracked || f.head[k.id] {
			f.live[k.id], f.order = k.obj, append(f.order, k.id)
		}
	}
	sort.Slice(f.order, func(i, j int) bool { return f.order[i].Less(f.order[j]) })
	if !f.tracking.Label && !f.tracking.Annotation {
		f.tracking.Annotation = true // Argo CD 3's default, for an Application with nothing live yet
	}
	return f, nil
}

// argoKinds are the kinds the renders name, and the namespaces they name.
type argoKinds struct {
	gvks       map[schema.GroupKind]schema.GroupVersionKind
	namespaced map[schema.GroupKind]bool
	namespaces map[string]bool
}

// add notes the kind and namespace of o; the head's version of a kind,
// added first, is kept.
func (k argoKinds) add(o *manifest.Object) {
	gk := o.GVK.GroupKind()
	if _, ok := k.gvks[gk]; !ok {
		k.gvks[gk] = o.GVK
	}
	if o.ID.Namespace != "" {
		k.namespaced[gk], k.namespaces[o.ID.Namespace] = true, true
	}
}

func (k argoKinds) sortedNamespaces() []string {
	out := make([]string, 0, len(k.namespaces))
	for ns := range k.namespaces {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// listed are the kinds to LIST in ns: all of them in the destination
// namespace dest (cluster-scoped kinds ignore it), the namespaced ones in
// another, so that a cluster-scoped kind is listed once.
func (k argoKinds) listed(ns, dest string) []schema.GroupVersionKind {
	out := make([]schema.GroupVersionKind, 0, len(k.gvks))
	for gk, gvk := range k.gvks {
		if ns == dest || k.namespaced[gk] {
			out = append(out, gvk)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// syncOf is the sync of the head's object id: the Application's, or its
// annotation's override.
func (f *argoFound) syncOf(sync argoSync, id manifest.ObjectID) argoSync {
	if o := f.overrides[id]; o != nil {
		return sync.forObject(o)
	}
	return sync
}

// last is the manifest the plan takes for the last applied: for each live
// object of the head or tracked, its last-applied configuration
// (client-side apply) when it has one, else its base render; a tracked
// object neither holds is named by its identity alone (it can only be
// pruned or left).
func (f *argoFound) last(sync argoSync) string {
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
func (f *argoFound) notes(ch gitops.Change, sync argoSync, applier *planner.Applier) []string {
	h := ch.Head
	var tracked []string
	if f.tracking.Label {
		tracked = append(tracked, "label "+argoInstanceLabel+"="+f.tracking.App)
	}
	if f.tracking.Annotation {
		tracked = append(tracked, "annotation "+argoTrackingID)
	}
	var how string
	switch {
	case sync.Replace:
		how = "Replace=true: Argo CD replaces (PUT) each object that exists; the server's dry-run of each PUT, compared with the base render"
	case sync.ServerSide:
		how = "ServerSideApply=true: the server's dry-run of Argo CD's server-side apply (field manager " + argoFieldManager + ", forcing conflicts as Argo CD does), compared with the base render"
	default:
		how = fmt.Sprintf("client-side apply, as Argo CD's sync runs kubectl apply: three-way with each object's last-applied configuration (%d object(s)); two-way with the base render and the live object where there is none (%d object(s))", f.lastApplied, f.fromBase)
	}
	notes := []string{
		fmt.Sprintf("--live: planned against the live objects of Application %s in namespace %s, tracked by %s: %s", f.tracking.App, h.Namespace, strings.Join(tracked, " and "), how),
		"--live: Argo CD itself was not run: the plan follows its sync's rules (rendering as helm template, apply, tracking, prune); sync waves, hooks as Argo CD orders them, ignoreDifferences and health are not planned; live objects were looked for among the kinds the base and head renders name, in the destination namespace and the namespaces the renders name",
	}
	for _, id := range f.order {
		if o := f.overrides[id]; o != nil && f.syncOf(sync, id) != sync {
			notes = append(notes, fmt.Sprintf("%s: %s %q overrides the Application's syncOptions: %s", id, argoSyncOptions, o.GetAnnotations()[argoSyncOptions], f.syncOf(sync, id).method()))
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
