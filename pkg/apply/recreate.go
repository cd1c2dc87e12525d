package apply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
)

// ErrRecreateRefused is matched (errors.Is) by the error Apply returns when
// a change in Request.Recreate cannot be recreated safely. Nothing was
// written.
var ErrRecreateRefused = errors.New("recreate refused")

// refuseRecreate checks, without the cluster, that every change may be
// recreated: an acknowledged recreate-required update, in the release
// namespace ns (a journal entry for anything else is refused on restore), of
// a kind whose deletion does not take other objects with it.
func refuseRecreate(changes []plan.Change, install bool, ns string) error {
	for _, c := range changes {
		why := neverRecreated(schema.GroupKind{Group: c.ID.Group, Kind: c.ID.Kind})
		switch {
		case why != "":
		case c.ID.Namespace != ns:
			why = fmt.Sprintf("safe-upgrade recreates only objects of the release namespace %s (it could not tell the journal entry of another from a forged one, so it could not restore it); change it in a way the API server accepts, or recreate it by hand", ns)
		case install:
			why = "the release is being installed: there is nothing to recreate"
		case c.Action != plan.ActionUpdate || c.Class != plan.ClassRecreateRequired:
			why = fmt.Sprintf("the plan says %s", describeVerdict(c))
		case !c.Acknowledged:
			why = "the change is not acknowledged"
		}
		if why != "" {
			return fmt.Errorf("%s: %w: %s", c.ID.String(), ErrRecreateRefused, why)
		}
	}
	return nil
}

// describeVerdict is the action and, when there is one, the class: "update (rolling)".
func describeVerdict(c plan.Change) string {
	if c.Class == plan.ClassNone {
		return string(c.Action)
	}
	return string(c.Action) + " (" + string(c.Class) + ")"
}

// recreator deletes the live objects of acknowledged recreate-required
// changes so that Helm's upgrade creates them from the planned manifest.
type recreator struct {
	cluster *live.Cluster
	out     io.Writer
	log     func(string, ...interface{})
	// release and namespace give the Helm ownership metadata.
	release, namespace string
	// timeout bounds deleting and waiting for all objects to be gone; poll
	// is the interval of the wait.
	timeout, poll time.Duration
	// journal, when set, is written after each delete.
	journal *journal
	// deployed are the objects of the release's last deployed revision
	// (deployedVersion): a live object is deleted only when --recover
	// would accept its journal entry (checkRestorable).
	deployed        *manifest.Set
	deployedVersion int
}

// recreateTarget is one object to recreate.
type recreateTarget struct {
	id      manifest.ObjectID
	planned *manifest.Object
	// live is the object in the cluster; nil when it is already gone (the
	// upgrade just creates it).
	live   *unstructured.Unstructured
	res    dynamic.ResourceInterface
	policy metav1.DeletionPropagation
	// impact says what happens to the object's dependants.
	impact string
}

// prepare finds each change's object in the planned manifest and checks,
// with dry-run requests only, that it can be deleted and created again: a
// dry-run create of the planned object (with Helm's ownership metadata) must
// pass validation (AlreadyExists means it did: the server validates before
// it looks for the name) and a dry-run delete must be allowed.
func (r *recreator) prepare(ctx context.Context, changes []plan.Change, nextManifest string) ([]*recreateTarget, error) {
	if len(changes) == 0 {
		return nil, nil
	}
	set, err := manifest.Split("planned manifest", nextManifest, r.namespace, r.cluster)
	if err != nil {
		return nil, err
	}
	dryRun := []string{metav1.DryRunAll}
	var targets []*recreateTarget
	for _, c := range changes {
		t := &recreateTarget{id: c.ID, planned: set.Get(c.ID)}
		name := c.ID.String()
		if t.planned == nil {
			return nil, fmt.Errorf("%s: %w: it is not in the planned manifest", name, ErrRecreateRefused)
		}
		obj := t.planned.Obj.DeepCopy()
		manifest.SetHelmOwnership(obj, r.release, r.namespace)
		res, _, err := r.cluster.Resource(t.planned.GVK, c.ID.Namespace)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		t.res = res
		if t.live, err = r.cluster.Lookup(ctx, t.planned.GVK, c.ID.Namespace, c.ID.Name); err != nil {
			return nil, fmt.Errorf("%s: reading the live object: %w", name, err)
		}
		if t.live != nil && r.deployed != nil {
			if err := checkRestorable(&unstructured.Unstructured{Object: restorable(t.live)}, r.namespace, r.deployed, r.deployedVersion); err != nil {
				return nil, fmt.Errorf("%s: %w: its journal entry would not pass the checks of a restore (%v); nothing was deleted: put back the deployed values, then plan again", name, ErrRecreateRefused, err)
			}
		}
		_, err = res.Create(ctx, obj, metav1.CreateOptions{DryRun: dryRun})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("%s: the new object does not pass the API server's validation (dry-run create), nothing was deleted: %w", name, err)
		}
		t.policy = propagation(c.ID)
		if t.live != nil {
			if err := res.Delete(ctx, c.ID.Name, r.deleteOptions(t, dryRun)); err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("%s: the API server refuses to delete it (dry-run delete), nothing was deleted: %w", name, err)
			}
		}
		if t.impact, err = r.impact(ctx, t); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		targets = append(targets, t)
	}
	return targets, nil
}

// propagation is the deletion policy for a recreated kind: a StatefulSet
// orphans its pods and PVCs (the new one adopts them); controllers of pods
// delete them first (foreground), so the new controller never runs next to
// the old pods; anything else is deleted at once and its dependants, if any,
// collected in the background.
func propagation(id manifest.ObjectID) metav1.DeletionPropagation {
	switch {
	case id.Group == "apps" && id.Kind == "StatefulSet":
		return metav1.DeletePropagationOrphan
	case id.Group == "apps" && (id.Kind == "Deployment" || id.Kind == "ReplicaSet" || id.Kind == "DaemonSet"),
		id.Group == "batch" && (id.Kind == "Job" || id.Kind == "CronJob"),
		id.Group == "" && id.Kind == "ReplicationController":
		return metav1.DeletePropagationForeground
	}
	return metav1.DeletePropagationBackground
}

func (r *recreator) deleteOptions(t *recreateTarget, dryRun []string) metav1.DeleteOptions {
	policy := t.policy
	uid := t.live.GetUID()
	return metav1.DeleteOptions{DryRun: dryRun, PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}}
}

// announce prints what will happen to each object and its dependants.
func (r *recreator) announce(targets []*recreateTarget) {
	for _, t := range targets {
		fmt.Fprintf(r.out, "%s: %s\n", t.id.String(), t.impact)
	}
}

// run deletes the live objects and waits until they are gone. It is called
// once nothing may stop the apply any more, so it does not take the
// caller's context: it is bounded by r.timeout alone.
func (r *recreator) run(targets []*recreateTarget) error {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	for _, t := range targets {
		if t.live == nil {
			continue
		}
		r.log("deleting %s (propagation %s) for recreation", t.id.String(), t.policy)
		err := t.res.Delete(ctx, t.id.Name, r.deleteOptions(t, nil))
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s: deleting it for recreation: %w", t.id.String(), err)
		}
		r.deleted(ctx, t)
	}
	for _, t := range targets {
		if t.live == nil {
			continue
		}
		if err := r.waitGone(ctx, t); err != nil {
			return fmt.Errorf("%s: %w", t.id.String(), err)
		}
	}
	return nil
}

// deleted marks t deleted in the journal. A journal that cannot be updated
// still names t: restore looks at the cluster, not at the mark.
func (r *recreator) deleted(ctx context.Context, t *recreateTarget) {
	if r.journal == nil {
		return
	}
	for i := range r.journal.rec.Objects {
		if o := &r.journal.rec.Objects[i]; o.UID == t.live.GetUID() {
			o.Deleted = true
		}
	}
	if err := r.journal.save(ctx); err != nil {
		r.log("warning: %v", err)
	}
}

// undo restores what the journal holds after a failure and, when all is
// back, removes the journal. It returns the line that says what was
// deleted and what was restored, for the error and the release history:
// what was deleted is what the server's answers and a fresh read of each
// object say (a delete whose answer was lost to a timeout still deleted).
func (r *recreator) undo(j *journal) (string, error) {
	ctx := context.Background()
	j.rec.Step = releasestate.StepRestoring
	if err := j.save(ctx); err != nil {
		r.log("warning: %v", err)
	}
	restored, deleted, err := j.restore(ctx, r.cluster, r.poll, r.timeout)
	line := "safe-upgrade deleted nothing"
	if len(deleted) > 0 {
		line = "safe-upgrade deleted " + strings.Join(deleted, ", ") + " for recreation"
	}
	if restored != "" {
		line += "; " + restored
	}
	if err == nil {
		err = j.remove(ctx)
	}
	if err != nil {
		line += "; " + err.Error()
	}
	return line, err
}

// waitGone polls until the object with the live UID no longer exists.
func (r *recreator) waitGone(ctx context.Context, t *recreateTarget) error {
	ticker := time.NewTicker(r.poll)
	defer ticker.Stop()
	for {
		obj, err := r.cluster.Lookup(ctx, t.planned.GVK, t.id.Namespace, t.id.Name)
		switch {
		case err == nil && (obj == nil || obj.GetUID() != t.live.GetUID()):
			return nil
		case err != nil && ctx.Err() == nil:
			return fmt.Errorf("waiting for it to be deleted: %w", err)
		}
		select {
		case <-ctx.Done():
			var finalizers []string
			if obj != nil {
				finalizers = obj.GetFinalizers()
			}
			return fmt.Errorf("still present %s after deleting it (finalizers %v)", r.timeout, finalizers)
		case <-ticker.C:
		}
	}
}

// impact describes what recreating t does to the object's dependants.
func (r *recreator) impact(ctx context.Context, t *recreateTarget) (string, error) {
	if t.live == nil {
		return "not in the cluster any more; the upgrade creates it", nil
	}
	switch t.id.Group + "/" + t.id.Kind {
	case "apps/StatefulSet":
		return r.statefulSetImpact(ctx, t)
	case "apps/Deployment", "apps/ReplicaSet", "apps/DaemonSet", "/ReplicationController":
		n, err := r.countPods(ctx, t.live, nil)
		if err != nil {
			return "", err
		}
		what := "its " + plural(n, "pod")
		if t.id.Kind == "Deployment" {
			what = "its ReplicaSets and " + plural(n, "pod")
		}
		return fmt.Sprintf("deleted with --cascade=foreground (%s are deleted first), then created by the upgrade: every pod is replaced at once", what), nil
	case "batch/Job":
		n, err := r.countPods(ctx, t.live, nil)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("recreated; the Job runs again (its previous run is deleted first, with its %s)", plural(n, "pod")), nil
	case "batch/CronJob":
		return "recreated; its Jobs and their pods are deleted first, later runs follow the new schedule", nil
	case "/Pod":
		return "deleted and created again by the upgrade: its containers restart", nil
	case "/Service":
		return serviceImpact(t), nil
	case "/PersistentVolumeClaim":
		return "recreated; the new claim binds a new volume and the old volume is released (with reclaimPolicy Delete its data is lost); the deletion waits while pods use the claim", nil
	case "/PersistentVolume":
		return "recreated; the deletion waits until no claim is bound to it", nil
	case "/ConfigMap", "/Secret":
		return "recreated; running pods keep what they read at start, mounted files follow the new object", nil
	case "rbac.authorization.k8s.io/RoleBinding", "rbac.authorization.k8s.io/ClusterRoleBinding":
		return "recreated; its subjects lose the role's permissions until the upgrade creates it again", nil
	case "storage.k8s.io/StorageClass":
		return "recreated; existing volumes keep the parameters they were provisioned with", nil
	}
	return "deleted, then created again by the upgrade", nil
}

func serviceImpact(t *recreateTarget) string {
	oldIP, _, _ := unstructured.NestedString(t.live.Object, "spec", "clusterIP")
	newIP, _, _ := unstructured.NestedString(t.planned.Obj.Object, "spec", "clusterIP")
	typ, _, _ := unstructured.NestedString(t.live.Object, "spec", "type")
	var parts []string
	switch {
	case typ == "ExternalName":
		parts = append(parts, "recreated")
	case oldIP == "None":
		parts = append(parts, "recreated; it stays headless (no clusterIP)")
	case newIP != "" && newIP != "None":
		parts = append(parts, fmt.Sprintf("recreated with the clusterIP %s the chart sets", newIP))
	default:
		parts = append(parts, fmt.Sprintf("recreated; it gets a new clusterIP (now %s): clients that cached the IP must resolve the name again", oldIP))
	}
	switch typ {
	case "NodePort":
		parts = append(parts, "its node ports change unless the chart sets them")
	case "LoadBalancer":
		parts = append(parts, "its load balancer is released and provisioned again (the external address may change)")
	}
	return strings.Join(parts, "; ") + "; connections fail until it is back"
}

// statefulSetImpact counts the pods and PVCs an orphaning delete keeps, and
// says whether the new StatefulSet adopts them.
func (r *recreator) statefulSetImpact(ctx context.Context, t *recreateTarget) (string, error) {
	newSel, err := selectorOf(t.planned.Obj)
	if err != nil {
		return "", fmt.Errorf("the planned spec.selector: %w", err)
	}
	var owned, foreign int
	if _, err := r.countPods(ctx, t.live, func(p *unstructured.Unstructured) {
		owned++
		if newSel == nil || !newSel.Matches(labels.Set(p.GetLabels())) {
			foreign++
		}
	}); err != nil {
		return "", err
	}
	claims, kept, err := r.countClaims(ctx, t)
	if err != nil {
		return "", err
	}
	msg := fmt.Sprintf("deleted with --cascade=orphan; its %s and %s are kept", plural(owned, "pod"), plural(claims, "PVC"))
	if foreign == 0 {
		msg += " and adopted by the new StatefulSet"
	} else {
		msg += fmt.Sprintf("; %d of the pods do not match the new selector: they stay orphaned and keep the new StatefulSet from creating pods of the same names until deleted", foreign)
	}
	if kept < claims {
		msg += fmt.Sprintf("; %s of claim templates the new StatefulSet does not have stay unused", plural(claims-kept, "PVC"))
	}
	msg += " (existing PVCs keep their spec: volumeClaimTemplates shape only claims created from now on"
	if len(grownTemplates(t)) > 0 {
		msg += "; after the upgrade, the existing claims of templates that request more storage are grown where bound and their StorageClass allows expansion"
	}
	return msg + ")", nil
}

// plural says "1 pod", "2 pods".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// countPods counts the pods of the live controller (matching its selector
// and, for the controllers that own pods directly, owned by it), calling
// each for every one.
func (r *recreator) countPods(ctx context.Context, ctrl *unstructured.Unstructured, each func(*unstructured.Unstructured)) (int, error) {
	sel, err := selectorOf(ctrl)
	if err != nil || sel == nil {
		return 0, err
	}
	pods, err := r.cluster.Pods(ctx, ctrl.GetNamespace(), sel)
	if err != nil {
		return 0, fmt.Errorf("listing its pods: %w", err)
	}
	direct := ctrl.GetKind() != "Deployment"
	n := 0
	for i := range pods {
		p := &pods[i]
		if direct && !ownedBy(p, ctrl.GetUID()) {
			continue
		}
		n++
		if each != nil {
			each(p)
		}
	}
	return n, nil
}

func ownedBy(obj *unstructured.Unstructured, uid types.UID) bool {
	for _, o := range obj.GetOwnerReferences() {
		if o.UID == uid {
			return true
		}
	}
	return false
}

// countClaims counts the PVCs created from the live StatefulSet's claim
// templates, and how many of them belong to templates the planned
// StatefulSet still has.
func (r *recreator) countClaims(ctx context.Context, t *recreateTarget) (claims, kept int, err error) {
	oldTemplates := live.ClaimTemplates(t.live)
	if len(oldTemplates) == 0 {
		return 0, 0, nil
	}
	newTemplates := map[string]bool{}
	for _, n := range live.ClaimTemplates(t.planned.Obj) {
		newTemplates[n] = true
	}
	set := t.live.GetName()
	pvcs, err := r.cluster.Claims(ctx, t.live.GetNamespace(), func(name string) bool {
		_, ok := live.ClaimTemplate(name, set, oldTemplates)
		return ok
	})
	if err != nil {
		return 0, 0, fmt.Errorf("listing its PVCs: %w", err)
	}
	for _, pvc := range pvcs {
		tmpl, _ := live.ClaimTemplate(pvc.GetName(), set, oldTemplates)
		claims++
		if newTemplates[tmpl] {
			kept++
		}
	}
	return claims, kept, nil
}

// selectorOf returns spec.selector of a workload; nil when it has none.
func selectorOf(obj *unstructured.Unstructured) (labels.Selector, error) {
	raw, found, err := unstructured.NestedMap(obj.Object, "spec", "selector")
	if err != nil || !found {
		return nil, err
	}
	if obj.GetKind() == "ReplicationController" {
		return labels.SelectorFromSet(toStringMap(raw)), nil
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls); err != nil {
		return nil, err
	}
	return metav1.LabelSelectorAsSelector(&ls)
}

func toStringMap(m map[string]interface{}) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}
