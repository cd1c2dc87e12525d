package verb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/panics"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/watch"
)

// StatusRequest is `status RELEASE…` with its flags.
type StatusRequest struct {
	// Releases are the releases asked (in the release namespace, or in
	// every namespace with AllNamespaces); none with AllNamespaces: every
	// release of the cluster.
	Releases      []string
	AllNamespaces bool
	// Timeout bounds the whole run.
	Timeout time.Duration
}

// Status compares the live objects of the releases asked with their stored
// manifests, rendering nothing: each release is planned as the next
// upgrade of the same chart and values, whose last and new manifests are
// both the stored one and whose live side is the cluster, so the planner's
// three-way patch, verdicts and noise rules say exactly what the drift
// means for that upgrade. Every kind of object is LISTed once for all the
// releases (live.Inventory); the LISTs also find the objects that carry a
// release's ownership metadata without being in its manifest. It sends no
// write but the planner's dry-runs.
func (c *Config) Status(ctx context.Context, req StatusRequest) (*plan.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	defer c.boundByContext(ctx)()
	st, err := c.status(ctx, req)
	return st, c.timedOut(err)
}

// statusTarget is one release asked: the revision its live objects are
// compared with and its newest revision, as releasestate chose them
// (target, whose apply method is read meanwhile).
type statusTarget struct {
	current, last *release.Release
	target        *releasestate.Target
	// objects are current's manifest's, parsed once (their content
	// decoded when needed: Load); the planner shares the parse.
	objects *manifest.Set
	parsed  *manifest.Parsed
	hooks   map[manifest.ObjectID]bool
	// unreadable are the release's records older than current that cannot
	// be read (statusUnreadable).
	unreadable []*releasestate.UnreadableError
}

func (c *Config) status(ctx context.Context, req StatusRequest) (*plan.Status, error) {
	if err := c.Stage("connect", func() error { return c.Connect(ctx) }); err != nil {
		return nil, err
	}
	c.progress("Reading the releases' records")
	var targets []*statusTarget
	var broken []plan.ReleaseStatus
	var helm *action.Configuration
	if err := c.Stage("releases", func() (err error) {
		helm, targets, broken, err = c.readTargets(ctx, req)
		return err
	}); err != nil {
		return nil, err
	}
	c.progress("Listing the live objects of %d release(s)", len(targets))
	var inv *live.Inventory
	var pods map[string][]*corev1.Pod
	var states releaseStates = perRelease{c.Cluster}
	if err := c.Stage("live", func() error {
		// The pods' LIST, the apply methods' GETs and the journals' and
		// Leases' LISTs beside the inventory's LISTs.
		var g errgroup.Group
		g.Go(func() (err error) {
			defer panics.Catch(&err)
			pods, err = c.statusPods(ctx, targets, req.AllNamespaces)
			return err
		})
		g.Go(func() error { return releasestate.ReadApplyMethods(ctx, helm, storedTargets(targets)) })
		if len(targets) > 1 {
			// One LIST each rather than two GETs per release.
			g.Go(func() (err error) {
				defer panics.Catch(&err)
				states = releasestate.ReadStates(ctx, c.Cluster, statesNamespace(c.Namespace, req.AllNamespaces))
				return nil
			})
		}
		inv = c.inventory(ctx, targets, req.AllNamespaces)
		return g.Wait()
	}); err != nil {
		return nil, err
	}
	c.Logf("status: %d LIST request(s) of the releases' kinds for %d release(s)", inv.Requests, len(targets))
	out := &plan.Status{ServerVersion: c.ServerVersion}
	observers, schemas := live.NewObservers(c.Cluster), live.NewSchemas(c.Cluster)
	// Releases are planned a few at a time: each plan reads little more
	// than the inventory (a single release's Lease and journal are a GET
	// each).
	out.Releases = make([]plan.ReleaseStatus, len(targets))
	start, requests := time.Now(), c.Requests()
	extras := c.extras(inv, targets)
	// One planner for every release: its parts read the same inventory.
	cluster := planner.Live{Cluster: c.Cluster, Observers: observers, Schemas: schemas}.Parts()
	cluster.Objects = inventoryObjects{inv: inv, cluster: c.Cluster}
	pl := c.planner(cluster, c.ServerVersion)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(statusConcurrency)
	for i, t := range targets {
		g.Go(func() (err error) {
			defer panics.Catch(&err) // a panic here would exit 2, the gate's code
			rs, err := c.releaseStatus(gctx, t, pl, inv, states)
			if err != nil {
				return err
			}
			rs.Health = append(rs.Health, c.workloadHealth(t, inv, pods)...)
			rs.Objects = append(rs.Objects, extras[t]...)
			sort.SliceStable(rs.Objects, func(i, j int) bool { return rs.Objects[i].ID.Less(rs.Objects[j].ID) })
			out.Releases[i] = *rs
			return nil
		})
	}
	err := g.Wait()
	c.logStage("plans", time.Since(start), c.Requests()-requests, "each release planned as the next upgrade of its stored manifest, with its health")
	if err != nil {
		return nil, err
	}
	out.Releases = append(out.Releases, broken...)
	return out, nil
}

// readTargets reads the releases asked (releasestate.Targets, or with
// AllNamespaces releasestate.TargetsEverywhere, from Helm's storage of
// every namespace) and parses their stored manifests; it returns the
// configuration the records were read with, and the releases whose newest
// record cannot be read (statusUnreadable).
func (c *Config) readTargets(ctx context.Context, req StatusRequest) (*action.Configuration, []*statusTarget, []plan.ReleaseStatus, error) {
	helm := c.Helm
	var found []*releasestate.Target
	var unreadable []*releasestate.UnreadableError
	var err error
	if !req.AllNamespaces {
		found, err = releasestate.Targets(c.Helm.Releases, c.Namespace, req.Releases)
	} else if helm, err = releasestate.NewConfiguration(c.Settings.RESTClientGetter(), "", os.Getenv("HELM_DRIVER"), c.Logf); err == nil {
		found, unreadable, err = releasestate.TargetsEverywhere(ctx, helm, req.Releases)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	targets := make([]*statusTarget, 0, len(found))
	for _, f := range found {
		t := &statusTarget{current: f.Current, last: f.Last, target: f}
		name := fmt.Sprintf("release %q revision %d manifest", t.current.Name, t.current.Version)
		if t.objects, t.parsed, err = manifest.SplitRemembering(name, t.current.Manifest, t.current.Namespace, c.Cluster); err != nil {
			return nil, nil, nil, err
		}
		t.hooks = releasestate.HookIDs(t.current)
		c.Sanitizer.AddManifest(t.current.Manifest)
		targets = append(targets, t)
	}
	targets, broken := c.statusUnreadable(targets, unreadable)
	return helm, targets, broken, nil
}

// storedTargets are the targets as releasestate chose them.
func storedTargets(targets []*statusTarget) []*releasestate.Target {
	out := make([]*releasestate.Target, len(targets))
	for i, t := range targets {
		out[i] = t.target
	}
	return out
}

// statusConcurrency bounds the releases planned at once; each plan bounds
// its own objects' evaluations.
const statusConcurrency = live.DefaultConcurrency

// inventory LISTs every kind the targets' manifests hold, once: in the
// release namespace when every object is there, else in every namespace.
// It keeps the targets' objects and those that claim to belong to one.
func (c *Config) inventory(ctx context.Context, targets []*statusTarget, allNamespaces bool) *live.Inventory {
	wanted := map[manifest.ObjectID]bool{}
	seen := map[schema.GroupVersionKind]bool{}
	var kinds []schema.GroupVersionKind
	namespaces := map[string]bool{}
	for _, t := range targets {
		namespaces[t.current.Namespace] = true
		for _, o := range t.objects.Objects() {
			wanted[o.ID] = true
			if o.ID.Namespace != "" {
				namespaces[o.ID.Namespace] = true
			}
			if !seen[o.GVK] {
				seen[o.GVK] = true
				kinds = append(kinds, o.GVK)
			}
		}
	}
	ns := ""
	if len(namespaces) == 1 && !allNamespaces {
		for n := range namespaces {
			ns = n
		}
	}
	keep := func(m live.ItemMeta) bool {
		return wanted[m.ID] || slices.ContainsFunc(targets, func(t *statusTarget) bool { return t.claims(m) })
	}
	return c.Cluster.ReadInventory(ctx, kinds, ns, live.DefaultConcurrency, keep)
}

// claims reports whether m, an object of the cluster, says it belongs to
// t's release without being one of its objects: Helm's ownership
// annotations naming the release, or the labels charts give every object
// (app.kubernetes.io/instance naming the release, managed-by Helm) in the
// release namespace. An object a controller owns (a ReplicaSet, a pod)
// and the release's hooks are no strays.
func (t *statusTarget) claims(m live.ItemMeta) bool {
	if m.Controlled || t.hooks[m.ID] || t.objects.Get(m.ID) != nil {
		return false
	}
	name, ns := t.current.Name, t.current.Namespace
	if owner, ok := m.Annotations[manifest.ReleaseNameAnnotation]; ok {
		ownerNS := m.Annotations[manifest.ReleaseNamespaceAnnotation]
		return owner == name && (ownerNS == ns || ownerNS == "" && m.ID.Namespace == ns)
	}
	return m.Labels["app.kubernetes.io/instance"] == name && m.Labels["app.kubernetes.io/managed-by"] == "Helm" && m.ID.Namespace == ns
}

// inventoryObjects answers the planner's Objects from the inventory: an
// object of a kind whose LIST failed is read with a GET.
type inventoryObjects struct {
	inv     *live.Inventory
	cluster *live.Cluster
}

// Prefetch implements planner.Objects.
func (o inventoryObjects) Prefetch(_ context.Context, objs []*manifest.Object, _ live.Lean) map[manifest.ObjectID]live.State {
	out := make(map[manifest.ObjectID]live.State, len(objs))
	for _, obj := range objs {
		if o.inv.Failed(obj.GVK.GroupKind()) == nil {
			out[obj.ID] = o.inv.State(obj.ID)
		}
	}
	return out
}

// Get implements planner.Objects.
func (o inventoryObjects) Get(ctx context.Context, obj, _ *manifest.Object) live.State {
	return o.cluster.Get(ctx, obj)
}

// releaseStatus plans t's next upgrade of the same manifest and turns each
// change into the object's status, with t's health.
func (c *Config) releaseStatus(ctx context.Context, t *statusTarget, pl *planner.Planner, inv *live.Inventory, states releaseStates) (*plan.ReleaseStatus, error) {
	cur := t.current
	rs := &plan.ReleaseStatus{Name: cur.Name, Namespace: cur.Namespace, Revision: cur.Version, Last: t.last.Version,
		HelmStatus: string(t.last.Info.Status), Chart: chartRef(cur.Chart), ApplyMethod: plan.ApplyMethodCSA}
	if cur.Chart != nil && cur.Chart.Metadata != nil {
		rs.AppVersion = c.Sanitizer.Text(cur.Chart.Metadata.AppVersion, redact.NameLimit)
	}
	rs.Chart = c.Sanitizer.Text(rs.Chart, redact.NameLimit)
	if t.last.Info != nil {
		rs.Updated = t.last.Info.LastDeployed.Time
	}
	if t.target.ServerSide {
		rs.ApplyMethod = plan.ApplyMethodSSA
	}
	in := planner.Input{
		Release: plan.Release{Name: cur.Name, Namespace: cur.Namespace, Revision: cur.Version, CurrentRevision: cur.Version,
			Chart: rs.Chart, Operation: plan.OperationUpgrade, ApplyMethod: rs.ApplyMethod},
		PreviousManifest: cur.Manifest,
		NextManifest:     cur.Manifest,
		NextParsed:       t.parsed,
	}
	p, err := pl.Plan(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("release %q in namespace %s: %w", cur.Name, cur.Namespace, err)
	}
	for i := range p.Changes {
		rs.Objects = append(rs.Objects, c.objectStatus(ctx, &p.Changes[i], t, inv))
	}
	rs.Health = c.health(ctx, t, states)
	if len(t.unreadable) > 0 {
		rs.Health, rs.Unreadable = append(rs.Health, c.unreadableLines(t.unreadable)...), true
	}
	rs.Notes = p.Notes
	return rs, nil
}

// objectStatus is one change of the status plan as the object's status.
func (c *Config) objectStatus(ctx context.Context, ch *plan.Change, t *statusTarget, inv *live.Inventory) plan.ObjectStatus {
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
	stored := t.objects.Get(ch.ID)
	var liveObj *unstructured.Unstructured
	if inv.Failed(schema.GroupKind{Group: ch.ID.Group, Kind: ch.ID.Kind}) == nil {
		liveObj = inv.State(ch.ID).Decode().Obj
	} else if stored != nil {
		liveObj = c.Cluster.Get(ctx, stored).Obj
	}
	s.Drift = c.fieldDrift(conflictDrift(ch), stored, liveObj)
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
func (c *Config) fieldDrift(drift []plan.Drift, stored *manifest.Object, liveObj *unstructured.Unstructured) []plan.FieldDrift {
	var storedObj *unstructured.Unstructured
	if stored != nil && stored.Load() == nil { // as the planner decoded it
		// As the drift was found: decoded (a Secret's stringData folded
		// into data), not defaulted.
		storedObj = predict.Decoded(stored.Obj)
	}
	maskedStored, maskedLive := c.Masker.Object(storedObj), c.Masker.Object(liveObj)
	owners := classify.Owners(liveObj, predict.FieldManager)
	out := make([]plan.FieldDrift, 0, len(drift))
	for _, d := range drift {
		fd := plan.FieldDrift{Path: d.Path, Reverted: d.Reverted,
			Stored: c.Sanitizer.Text(classify.ValueAt(maskedStored, d.Path), redact.MessageLimit),
			Live:   c.Sanitizer.Text(classify.ValueAt(maskedLive, d.Path), redact.MessageLimit)}
		if managers := owners.Owner(d.Path); managers != "" {
			fd.Manager = c.Sanitizer.Text(managers, redact.NameLimit)
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

// extras returns, per target, the objects of the inventory that claim its
// release without being in any target's manifest; each item is decoded
// once, whatever the number of targets.
func (c *Config) extras(inv *live.Inventory, targets []*statusTarget) map[*statusTarget][]plan.ObjectStatus {
	out := map[*statusTarget][]plan.ObjectStatus{}
	for _, id := range inv.IDs() {
		if slices.ContainsFunc(targets, func(o *statusTarget) bool { return o.objects.Get(id) != nil }) {
			continue
		}
		st := inv.State(id).Decode()
		if st.Obj == nil {
			continue
		}
		m := live.ItemMeta{ID: id, Labels: st.Obj.GetLabels(), Annotations: st.Obj.GetAnnotations()}
		how := "labels app.kubernetes.io/instance and app.kubernetes.io/managed-by: Helm name"
		if _, ok := m.Annotations[manifest.ReleaseNameAnnotation]; ok {
			how = "annotation " + manifest.ReleaseNameAnnotation + " names"
		}
		for _, t := range targets {
			if t.claims(m) {
				out[t] = append(out[t], plan.ObjectStatus{ID: id, APIVersion: st.Obj.GetAPIVersion(), State: plan.StateExtra,
					Notes: []string{fmt.Sprintf("not in revision %d's manifest, but its %s the release: Helm neither upgrades nor deletes it", t.current.Version, how)}})
			}
		}
	}
	return out
}

// health is what is wrong with t's release besides drift: Helm's status,
// an unfinished recreate journal, a held Lease.
func (c *Config) health(ctx context.Context, t *statusTarget, states releaseStates) []string {
	var out []string
	name, ns := t.current.Name, t.current.Namespace
	if s := t.last.Info.Status; s != release.StatusDeployed {
		line := fmt.Sprintf("Helm status of revision %d is %s", t.last.Version, s)
		if d := t.last.Info.Description; d != "" {
			line += ": " + d
		}
		if t.current != t.last {
			line += fmt.Sprintf(" (compared with revision %d, the last deployed one)", t.current.Version)
		}
		out = append(out, line)
	}
	var journal *releasestate.JournalError
	switch err := states.CheckJournal(ctx, name, ns); {
	case errors.As(err, &journal):
		out = append(out, "an interrupted apply left its recreate journal: "+err.Error())
	case err != nil:
		out = append(out, "the recreate journal could not be read: "+err.Error())
	}
	lease, err := states.ObserveLease(ctx, name, ns, c.Now())
	switch {
	case err != nil:
		out = append(out, "the release's Lease could not be read: "+err.Error())
	case lease.Note() != "":
		out = append(out, lease.Note())
	}
	for i, l := range out {
		out[i] = c.Sanitizer.Text(l, redact.MessageLimit)
	}
	return out
}

// releaseStates reads the releases' recreate journals and Leases: a GET
// each (perRelease), or from one LIST each (releasestate.States).
type releaseStates interface {
	CheckJournal(ctx context.Context, name, ns string) error
	ObserveLease(ctx context.Context, release, ns string, now time.Time) (*releasestate.LeaseObservation, error)
}

// perRelease reads a release's journal and Lease with a GET each.
type perRelease struct{ cluster *live.Cluster }

func (p perRelease) CheckJournal(ctx context.Context, name, ns string) error {
	return releasestate.CheckJournal(ctx, p.cluster, name, ns)
}

func (p perRelease) ObserveLease(ctx context.Context, release, ns string, now time.Time) (*releasestate.LeaseObservation, error) {
	return releasestate.ObserveLease(ctx, p.cluster, release, ns, false, now)
}

// statesNamespace is where the journals and Leases of the releases asked
// are: the release namespace, or every namespace.
func statesNamespace(ns string, allNamespaces bool) string {
	if allNamespaces {
		return ""
	}
	return ns
}

// statusPods LISTs the pods of the targets' namespaces once (every
// namespace when they are several), when a target has a workload: the
// watch's health check reads why a workload is not ready from them.
func (c *Config) statusPods(ctx context.Context, targets []*statusTarget, allNamespaces bool) (map[string][]*corev1.Pod, error) {
	namespaces := map[string]bool{}
	for _, t := range targets {
		for _, o := range t.objects.Objects() {
			if watch.Workload(o.GVK.GroupKind()) {
				namespaces[o.ID.Namespace] = true
			}
		}
	}
	if len(namespaces) == 0 {
		return nil, nil
	}
	ns := ""
	if len(namespaces) == 1 && !allNamespaces {
		for n := range namespaces {
			ns = n
		}
	}
	list, err := c.Cluster.Dynamic.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		c.Logf("status: pods not listed, workloads' reasons not read: %v", err)
		return nil, nil
	}
	out := map[string][]*corev1.Pod{}
	for i := range list.Items {
		pod := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, pod); err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", list.Items[i].GetNamespace(), list.Items[i].GetName(), err)
		}
		out[pod.Namespace] = append(out[pod.Namespace], pod)
	}
	return out, nil
}

// workloadHealth is a line for each workload of t that is not ready, with
// the watch's reason (watch.Check): an image that cannot be pulled, a
// crash loop, a pod that cannot be scheduled.
func (c *Config) workloadHealth(t *statusTarget, inv *live.Inventory, pods map[string][]*corev1.Pod) []string {
	var out []string
	for _, o := range t.objects.Objects() {
		if !watch.Workload(o.GVK.GroupKind()) || inv.Failed(o.GVK.GroupKind()) != nil {
			continue
		}
		obj := inv.State(o.ID).Decode().Obj
		if obj == nil {
			continue // missing: said as such
		}
		if h := watch.Check(obj, pods[o.ID.Namespace]); h.State != plan.StateCurrent {
			out = append(out, c.Sanitizer.Text(fmt.Sprintf("%s not ready: %s", o.ID, h), redact.MessageLimit))
		}
	}
	return out
}
