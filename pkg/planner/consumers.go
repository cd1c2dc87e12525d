package planner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// WorkloadLister reads the workloads of a namespace, for the readers of a
// changed ConfigMap or Secret outside the release.
type WorkloadLister interface {
	// EachObject hands each object of gvk in namespace to each;
	// live.ErrNoServer offline.
	EachObject(ctx context.Context, gvk schema.GroupVersionKind, namespace string, each func(*unstructured.Unstructured)) error
}

// EachObject implements WorkloadLister.
func (Offline) EachObject(context.Context, schema.GroupVersionKind, string, func(*unstructured.Unstructured)) error {
	return live.ErrNoServer
}

// workloadVersions are the API versions the workload kinds are listed in.
var workloadVersions = map[string]string{"apps": "v1", "batch": "v1", "": "v1"}

// configTarget is a ConfigMap or Secret change whose readers are looked for,
// with its keys before and after (values masked for Secrets).
type configTarget struct {
	change        *plan.Change
	before, after map[string]interface{}
	deleted       bool
	created       bool
	changed       map[string]bool
}

// insideReads keys what each workload of the new render reads (the objects
// pass's reads, in the order of ids) by its identity.
func insideReads(ids []manifest.ObjectID, reads [][]classify.ConfigRef) map[manifest.ObjectID][]classify.ConfigRef {
	inside := map[manifest.ObjectID][]classify.ConfigRef{}
	for i, r := range reads {
		if len(r) > 0 {
			inside[ids[i]] = r
		}
	}
	return inside
}

// configTargets are the changes of ConfigMaps and Secrets whose data the
// upgrade changes: created, deleted, or updated in a key; a change of
// regenerated or ignored fields only is left out (its readers are not
// told to restart for a value made anew on every render).
func configTargets(changes []plan.Change) []*configTarget {
	var out []*configTarget
	for i := range changes {
		c := &changes[i]
		if c.ID.Group != "" || (c.ID.Kind != "ConfigMap" && c.ID.Kind != "Secret") || c.Regenerated || c.Ignored {
			continue
		}
		t := &configTarget{change: c, before: configData(c.Before), after: configData(c.After)}
		switch c.Action {
		case plan.ActionCreate:
			t.created = true
		case plan.ActionDelete:
			t.deleted, t.after = true, nil
		case plan.ActionUpdate:
		default:
			continue
		}
		t.changed = map[string]bool{}
		for _, k := range slices.Concat(slices.Collect(maps.Keys(t.before)), slices.Collect(maps.Keys(t.after))) {
			b, inB := t.before[k]
			a, inA := t.after[k]
			if inA != inB || !reflect.DeepEqual(a, b) {
				t.changed[k] = true
			}
		}
		if c.Action == plan.ActionUpdate && len(t.changed) == 0 {
			continue // metadata only: no pod sees a difference
		}
		out = append(out, t)
	}
	return out
}

// configData is the keys of a ConfigMap or Secret and their values (as
// shown: a Secret's masked), whatever field holds them.
func configData(obj *unstructured.Unstructured) map[string]interface{} {
	out := map[string]interface{}{}
	if obj == nil {
		return out
	}
	for _, field := range []string{"data", "binaryData", "stringData"} {
		m, _ := obj.Object[field].(map[string]interface{})
		maps.Copy(out, m)
	}
	return out
}

// configConsumers finds, for every ConfigMap and Secret the plan changes,
// the workloads that read it and what their running pods see (see
// plan.Consumer): those of the new render (inside, their references by
// workload), and, against a cluster, those of the release's namespace that
// the release does not hold (one LIST per workload kind, only when such a
// change exists). A read without optional of a key the change removes, or
// of the object it deletes, makes the change destructive. It returns the
// plan's notes.
func (p *Planner) configConsumers(ctx context.Context, ns string, changes []plan.Change, inside map[manifest.ObjectID][]classify.ConfigRef, san *redact.Sanitizer) []string {
	targets := configTargets(changes)
	if len(targets) == 0 {
		return nil
	}
	workloads := map[manifest.ObjectID]*plan.Change{}
	for i := range changes {
		workloads[changes[i].ID] = &changes[i]
	}
	ids := slices.Collect(maps.Keys(inside))
	sort.Slice(ids, func(i, j int) bool { return ids[i].Less(ids[j]) })
	pulls := serviceAccountPulls(inside)
	for _, id := range ids {
		w := workloads[id]
		if w != nil && w.Action == plan.ActionDelete || !classify.IsWorkload(id.Group, id.Kind) {
			continue
		}
		consume(targets, id, w, false, pulls.expand(id.Namespace, inside[id]))
	}
	notes := []string{insideOnly}
	if p.Cluster.Workloads != nil {
		notes = p.outsideConsumers(ctx, ns, targets, workloads, pulls)
	}
	for _, t := range targets {
		for i := range t.change.Consumers {
			sanitizeConsumer(&t.change.Consumers[i], san)
		}
		failing(t.change)
	}
	return notes
}

// insideOnly is the note of a plan whose readers of ConfigMaps and Secrets
// are the release's only.
const insideOnly = "offline: the readers of changed ConfigMaps and Secrets are those inside the release only; the cluster's other workloads were not read"

// outsideConsumers adds the readers of targets that the release does not
// hold, read from namespace ns, to targets; its notes say what could not be
// read.
func (p *Planner) outsideConsumers(ctx context.Context, ns string, targets []*configTarget, release map[manifest.ObjectID]*plan.Change, pulls saPulls) []string {
	var failed []string
	var first error
	for _, kind := range slices.Sorted(maps.Keys(classify.WorkloadKinds)) {
		group := classify.WorkloadKinds[kind]
		gvk := schema.GroupVersionKind{Group: group, Version: workloadVersions[group], Kind: kind}
		err := p.Cluster.Workloads.EachObject(ctx, gvk, ns, func(obj *unstructured.Unstructured) {
			id := manifest.ObjectID{Group: group, Kind: kind, Namespace: ns, Name: obj.GetName()}
			if _, ok := release[id]; ok || controlledByWorkload(obj) || finished(obj) {
				return // read from the render, through its controller's template, or by no running pod
			}
			consume(targets, id, nil, true, pulls.expand(ns, podReads(group, kind, obj.Object)))
		})
		if errors.Is(err, live.ErrNoServer) {
			return []string{insideOnly}
		}
		if err != nil {
			failed = append(failed, kind)
			if first == nil {
				first = err
			}
		}
	}
	if len(failed) == 0 {
		return nil
	}
	// One note: a user who may not list one kind seldom may list the others.
	return []string{fmt.Sprintf("the readers of changed ConfigMaps and Secrets outside the release were not all read: listing %s in %s: %v", strings.Join(failed, ", "), ns, first)}
}

// controlledByWorkload reports whether obj's controller is of a workload
// kind (a Deployment's ReplicaSet, a ReplicaSet's Pod, a CronJob's Job):
// its template is its controller's, read there.
func controlledByWorkload(obj *unstructured.Unstructured) bool {
	for _, o := range obj.GetOwnerReferences() {
		if o.Controller != nil && *o.Controller {
			gv, _ := schema.ParseGroupVersion(o.APIVersion)
			if g, ok := classify.WorkloadKinds[o.Kind]; ok && g == gv.Group {
				return true
			}
		}
	}
	return false
}

// finished reports whether obj is a Pod that has ended (a completed test
// pod, say): it runs nothing that could keep an old value.
func finished(obj *unstructured.Unstructured) bool {
	if obj.GetKind() != "Pod" && obj.GetKind() != "" {
		return false
	}
	phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
	return phase == "Succeeded" || phase == "Failed"
}

// consume adds workload id's reads refs to the targets they read; w is the
// workload's change in the plan (nil: none, or outside the release).
func consume(targets []*configTarget, id manifest.ObjectID, w *plan.Change, outside bool, refs []classify.ConfigRef) {
	rolls := w != nil && (w.Action == plan.ActionCreate || w.Action == plan.ActionUpdate &&
		(w.Class == plan.ClassRolling || w.Class == plan.ClassRecreateRequired))
	for _, r := range refs {
		for _, t := range targets {
			if t.change.ID.Kind != r.Kind || t.change.ID.Name != r.Name || t.change.ID.Namespace != id.Namespace {
				continue
			}
			c := plan.Consumer{Workload: id, Outside: outside, Container: r.Container, Via: r.Via, Key: r.Key, Env: r.Env, Optional: r.Optional,
				ServiceAccount: r.ServiceAccount}
			_, has := t.after[r.Key]
			c.Missing = t.deleted || r.Key != "" && !has
			c.Sees = sight(t, r, id.Kind, rolls)
			t.change.Consumers = append(t.change.Consumers, c)
		}
	}
}

// sight is what the running pods of a workload of kind see of t through
// r; rolls says its pod template changes in the plan.
func sight(t *configTarget, r classify.ConfigRef, kind string, rolls bool) plan.Sight {
	_, had := t.before[r.Key]
	_, has := t.after[r.Key]
	gone := t.deleted || r.Key != "" && had && !has
	switch {
	case gone && !r.Optional && r.Via != plan.ViaImagePullSecrets:
		return plan.SightFails
	case rolls:
		return plan.SightRolls
	case r.Key != "" && !t.changed[r.Key]:
		return plan.SightUnaffected
	case r.Via == plan.ViaImagePullSecrets:
		return plan.SightNextPull
	case r.Via == plan.ViaVolume:
		return plan.SightFile
	case kind == "Job" || kind == "CronJob":
		return plan.SightNextStart
	case t.created && !r.Optional:
		// Its pods could not start without it: the kubelet retries them.
		return plan.SightNextStart
	}
	return plan.SightStale
}

// sanitizeConsumer escapes what the render or the cluster named (a
// workload, a container, a key, a variable) as every text of the plan is.
func sanitizeConsumer(c *plan.Consumer, san *redact.Sanitizer) {
	for _, f := range []*string{&c.Workload.Name, &c.Container, &c.Key, &c.Env, &c.ServiceAccount} {
		*f = san.Text(*f, redact.MessageLimit)
	}
}

// failing makes c destructive when a reader's next pod fails to start: one
// reason per such reader, which the fingerprint covers.
func failing(c *plan.Change) {
	for _, u := range c.Consumers {
		if u.Sees != plan.SightFails {
			continue
		}
		path := ""
		if u.Key != "" {
			path = "data." + u.Key
		}
		c.Destructive = true
		c.Reasons = append(c.Reasons, plan.Reason{Path: path, Message: u.Text(), Source: plan.SourceCatalogue,
			Consumer: u.Workload.Kind + "/" + u.Workload.Name})
	}
}

// saPulls are the imagePullSecrets of the release's ServiceAccounts, by
// namespace and name.
type saPulls map[[2]string][]classify.ConfigRef

// serviceAccountPulls gathers the ServiceAccounts' reads among inside.
func serviceAccountPulls(inside map[manifest.ObjectID][]classify.ConfigRef) saPulls {
	out := saPulls{}
	for id, refs := range inside {
		if id.Group == "" && id.Kind == "ServiceAccount" {
			out[[2]string{id.Namespace, id.Name}] = refs
		}
	}
	return out
}

// expand replaces a pod template's ServiceAccount read (classify.ConfigRefs)
// by the imagePullSecrets of that ServiceAccount when the release holds
// it (one the release does not hold is not read: its pull secrets are
// not known), in namespace ns.
func (s saPulls) expand(ns string, refs []classify.ConfigRef) []classify.ConfigRef {
	out := make([]classify.ConfigRef, 0, len(refs))
	for _, r := range refs {
		if r.Kind == "ServiceAccount" {
			out = append(out, s[[2]string{ns, r.Name}]...)
			continue
		}
		out = append(out, r)
	}
	return out
}

// podReads are the reads of ConfigMaps and Secrets by obj: a workload's
// pod template's (classify.ConfigRefs, and its ServiceAccount, which
// saPulls.expand resolves), or a ServiceAccount's imagePullSecrets.
func podReads(group, kind string, obj map[string]interface{}) []classify.ConfigRef {
	if group == "" && kind == "ServiceAccount" {
		return classify.ServiceAccountPulls(obj)
	}
	refs := classify.ConfigRefs(group, kind, obj)
	if sa, ok := classify.ServiceAccountRef(group, kind, obj); ok {
		refs = append(refs, sa)
	}
	return refs
}
