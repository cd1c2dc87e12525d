package watch

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// The labels and annotations the workload controllers mark the revision
// of a pod template with.
const (
	templateHashLabel       = "pod-template-hash"                        // a Deployment's ReplicaSets and their pods
	revisionHashLabel       = "controller-revision-hash"                 // a StatefulSet's (and DaemonSet's) pods
	templateGenerationLabel = "pod-template-generation"                  // a DaemonSet's pods
	templateGenerationAnno  = "deprecated.daemonset.template.generation" // a DaemonSet's template generation
	deploymentRevisionAnno  = "deployment.kubernetes.io/revision"        // a Deployment's and its ReplicaSets' revision
)

var replicaSetsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}

// revision returns whether a pod of t, a workload whose live object is
// obj, is of the revision its controller rolls out now, the one the
// upgrade produced: for a StatefulSet the pods whose
// controller-revision-hash is its status.updateRevision, for a DaemonSet
// those of its template generation, for a Deployment those of its newest
// ReplicaSet (read only when a pod that was there before the upgrade has a
// problem: see newReplicaSetHash). Until the controller has seen the
// object's generation, or when the revision cannot be told, the pods
// created since the snapshot are. Nil (every pod) for a Job.
func (w *Watcher) revision(t *target, obj *unstructured.Unstructured) func(*corev1.Pod) bool {
	if t.gvk.Kind == "Job" || obj == nil {
		return nil
	}
	if of := revisionLabel(t.gvk.Kind, obj); of != nil {
		return of
	}
	fresh := func(p *corev1.Pod) bool {
		uid, before := t.podsBefore[p.Name]
		return !before || uid != p.UID
	}
	if t.gvk.Kind == "Deployment" && observed(obj) {
		return func(p *corev1.Pod) bool {
			if fresh(p) {
				return true
			}
			hash := w.newReplicaSetHash(obj)
			return hash == "" || p.Labels[templateHashLabel] == hash
		}
	}
	return fresh
}

// revisionLabel tells the pods of the revision a StatefulSet's or
// DaemonSet's controller rolls out now, from obj's status and labels
// alone; nil for another kind, or when the controller has not seen obj's
// generation yet.
func revisionLabel(kind string, obj *unstructured.Unstructured) func(*corev1.Pod) bool {
	if obj == nil || !observed(obj) {
		return nil
	}
	labelled := func(label, value string) func(*corev1.Pod) bool {
		return func(p *corev1.Pod) bool { return p.Labels[label] == value }
	}
	switch kind {
	case "StatefulSet":
		if rev, _, _ := unstructured.NestedString(obj.Object, "status", "updateRevision"); rev != "" {
			return labelled(revisionHashLabel, rev) // the ControllerRevision's name
		}
	case "DaemonSet":
		if gen := obj.GetAnnotations()[templateGenerationAnno]; gen != "" {
			return labelled(templateGenerationLabel, gen)
		}
	}
	return nil
}

// observed reports whether obj's controller has seen its generation.
func observed(obj *unstructured.Unstructured) bool {
	gen, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	return gen >= obj.GetGeneration()
}

// newReplicaSetHash is the pod-template-hash of the ReplicaSet of
// Deployment obj whose revision is the Deployment's (its new one, as the
// controller marks them), "" when none is found; one LIST of ReplicaSets
// per Deployment and revision, only when asked.
func (w *Watcher) newReplicaSetHash(obj *unstructured.Unstructured) string {
	revision := obj.GetAnnotations()[deploymentRevisionAnno]
	key := string(obj.GetUID()) + "/" + revision
	if hash, ok := w.newSets[key]; ok || revision == "" {
		return hash
	}
	if w.newSets == nil {
		w.newSets = map[string]string{}
	}
	w.newSets[key] = ""
	opts := metav1.ListOptions{}
	if sel := selectorOf(obj); sel != nil {
		opts.LabelSelector = sel.String()
	}
	w.requests.add(replicaSetsGVR, false)
	list, err := w.reader.List(w.life, replicaSetsGVR, obj.GetNamespace(), opts)
	if err != nil {
		return ""
	}
	for _, rs := range list.Items {
		owner := metav1.GetControllerOf(&rs)
		if owner != nil && owner.UID == obj.GetUID() && rs.GetAnnotations()[deploymentRevisionAnno] == revision {
			w.newSets[key] = rs.GetLabels()[templateHashLabel]
		}
	}
	return w.newSets[key]
}

// unreadyBefore is what kept a workload from being ready before the
// upgrade: the worst problem of its pods as Snapshot LISTed them just
// before the apply; "" when none had one. (The plan's live object is no witness: its
// status may be older, or not kept.)
func unreadyBefore(pods []*corev1.Pod) string {
	var worst *problem
	for _, p := range pods {
		if pr := podProblem(p); pr != nil && (worst == nil || pr.rank > worst.rank) {
			worst = pr
		}
	}
	if worst == nil {
		return ""
	}
	return worst.text
}

// reusedReplicaSet finds, among sets (the ReplicaSets of t's namespace),
// the one owned by Deployment t whose pod template is the one the upgrade
// applies, as the Deployment controller compares them (semantically
// equal, the pod-template-hash label aside): the controller scales it
// back up rather than create a new one, so its pods are kept. It returns
// its name and pod-template-hash, "" when none is.
func reusedReplicaSet(t *target, sets []unstructured.Unstructured) (string, string) {
	want, ok := podTemplate(t.change.After)
	if !ok {
		return "", ""
	}
	var uid types.UID
	if t.before != nil {
		uid = t.before.uid
	}
	for i := range sets {
		rs := &sets[i]
		owner := metav1.GetControllerOf(rs)
		if owner == nil || owner.Kind != "Deployment" || owner.Name != t.change.ID.Name || uid != "" && owner.UID != uid {
			continue
		}
		got, ok := podTemplate(rs)
		if ok && equality.Semantic.DeepEqual(got, want) {
			return rs.GetName(), rs.GetLabels()[templateHashLabel]
		}
	}
	return "", ""
}

// podTemplate is o's spec.template without the pod-template-hash label.
func podTemplate(o *unstructured.Unstructured) (*corev1.PodTemplateSpec, bool) {
	if o == nil {
		return nil, false
	}
	m, ok, _ := unstructured.NestedMap(o.Object, "spec", "template")
	if !ok {
		return nil, false
	}
	var tpl corev1.PodTemplateSpec
	if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &tpl) != nil {
		return nil, false
	}
	delete(tpl.Labels, templateHashLabel)
	if len(tpl.Labels) == 0 {
		tpl.Labels = nil
	}
	return &tpl, true
}

// expectReused makes t's expectation, a Deployment whose template
// changes, that of an earlier ReplicaSet scaled back up when one has the
// template applied (a drift reverted) and pods: those among mine, t's
// pods before the apply, are kept. The ReplicaSets of t's namespace are
// LISTed once, into sets; a LIST that fails leaves every pod replaced.
func (w *Watcher) expectReused(ctx context.Context, t *target, sets map[string][]unstructured.Unstructured, mine []*corev1.Pod) {
	ns := t.change.ID.Namespace
	list, ok := sets[ns]
	if !ok {
		w.requests.add(replicaSetsGVR, false)
		if got, err := w.reader.List(ctx, replicaSetsGVR, ns, metav1.ListOptions{}); err == nil {
			list = got.Items
		}
		sets[ns] = list
	}
	name, hash := reusedReplicaSet(t, list)
	kept := map[string]bool{}
	for _, p := range mine {
		if name != "" && hash != "" && p.Labels[templateHashLabel] == hash {
			kept[p.Name] = true
		}
	}
	if len(kept) > 0 { // scaled down to none, it brings new pods only
		t.expect.kind, t.expect.reused, t.expect.reusedPods = expectReused, name, kept
	}
}
