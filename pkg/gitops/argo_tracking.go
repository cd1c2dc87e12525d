package gitops

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubectlutil "k8s.io/kubectl/pkg/util"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// ArgoObject is an object as Argo CD's tracking annotation names it: its
// group, kind, namespace and name (a manifest.ObjectID converts to it).
type ArgoObject struct {
	Group, Kind, Namespace, Name string
}

// ArgoTracking is how Argo CD marks the objects of one Application.
type ArgoTracking struct {
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

// Tracks reports whether Argo CD counts the object id, with labels and
// annotations, as the Application's (of namespace appNamespace): by its
// label, or by its tracking annotation naming the object itself (a copied
// annotation names another object and does not count), with the instance
// name the annotation gives.
func (t ArgoTracking) Tracks(id ArgoObject, labels, annotations map[string]string, appNamespace string) (label bool, instance string) {
	label = labels[ArgoInstanceLabel] == t.App
	value := annotations[ArgoTrackingID]
	if value == "" {
		return label, ""
	}
	for _, app := range []string{t.App, appNamespace + "_" + t.App} {
		if argoNamesItself(value, app, id) {
			return label, app
		}
	}
	return label, ""
}

// ArgoMark is how one live object is marked: its label names the
// Application, its tracking annotation names it with Instance.
type ArgoMark struct {
	Label    bool
	Instance string
}

// Settle sets which marks t's tracked live objects carry, from the marks
// of the objects read, and reports which of them the Application tracks.
// Under annotation tracking (annotation or annotation+label) Argo CD's
// GetAppName reads the annotation alone: the label, which most charts set
// to the release name, does not make an object the Application's. The
// method is the one the live objects show: the annotation when one
// carries it naming itself, else the label; an Application with nothing
// live yet takes Argo CD 3's default, the annotation.
func (t *ArgoTracking) Settle(marks []ArgoMark) []bool {
	for _, m := range marks {
		if m.Instance != "" {
			t.Annotation, t.Instance = true, m.Instance
		}
	}
	tracked := make([]bool, len(marks))
	for i, m := range marks {
		tracked[i] = m.Label
		if t.Annotation {
			tracked[i] = m.Instance != ""
		}
		// Label: the objects it tracks carry the label too (label, or
		// annotation+label tracking): the head's get it.
		t.Label = t.Label || tracked[i] && m.Label
	}
	if !t.Label && !t.Annotation {
		t.Annotation = true
	}
	return tracked
}

// Mark marks obj, the head's object id, as Argo CD's sync s of the
// Application does: the instance label and the tracking annotation as t
// says, and kubectl apply's last-applied configuration for a client-side
// apply, computed by kubectl's own code.
func (t ArgoTracking) Mark(obj *unstructured.Unstructured, id ArgoObject, s ArgoSync) {
	if md, ok := obj.Object["metadata"].(map[string]interface{}); ok {
		obj.Object["metadata"] = maps.Clone(md) // may be shared with another form (manifest.Parsed)
	}
	if t.Label || !t.Annotation {
		labels := obj.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[ArgoInstanceLabel] = t.App
		obj.SetLabels(labels)
	}
	if t.Annotation {
		instance := t.Instance
		if instance == "" {
			instance = t.App
		}
		setAnnotation(obj, ArgoTrackingID, ArgoTrackingValue(instance, t.Namespace, id))
	}
	if o := s.ForObject(obj); !o.ServerSide && !o.Replace {
		if data, err := kubectlutil.GetModifiedConfiguration(obj, false, unstructured.UnstructuredJSONScheme); err == nil {
			setAnnotation(obj, redact.LastAppliedAnnotation, string(data))
		}
	}
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

// argoNamesItself reports whether the tracking annotation value names the
// object id of app, as Argo CD's isSelfReferencedObj compares them: the
// namespace it names is not compared for a cluster-scoped object (it is
// the destination namespace of whichever Application wrote it).
func argoNamesItself(value, app string, id ArgoObject) bool {
	rest, ok := strings.CutPrefix(value, fmt.Sprintf("%s:%s/%s:", app, id.Group, id.Kind))
	ns, name, ok2 := strings.Cut(rest, "/")
	return ok && ok2 && name == id.Name && (ns == id.Namespace || id.Namespace == "")
}

// ArgoTrackingValue is the tracking annotation of the object id of app
// synced into namespace: a cluster-scoped object names that namespace.
func ArgoTrackingValue(app, namespace string, id ArgoObject) string {
	if id.Namespace != "" {
		namespace = id.Namespace
	}
	return fmt.Sprintf("%s:%s/%s:%s/%s", app, id.Group, id.Kind, namespace, id.Name)
}

// ArgoKinds are the kinds an Application's renders name, and the
// namespaces they name: where its tracked objects are looked for.
type ArgoKinds struct {
	gvks       map[schema.GroupKind]schema.GroupVersionKind
	namespaced map[schema.GroupKind]bool
	namespaces map[string]bool
	dest       string
}

// NewArgoKinds are the kinds of an Application whose destination
// namespace is dest, which is always looked in.
func NewArgoKinds(dest string) *ArgoKinds {
	return &ArgoKinds{gvks: map[schema.GroupKind]schema.GroupVersionKind{}, namespaced: map[schema.GroupKind]bool{},
		namespaces: map[string]bool{dest: true}, dest: dest}
}

// Add notes the kind of an object and its namespace (""
// for a cluster-scoped one); the version of a kind added first (the
// head's) is kept.
func (k *ArgoKinds) Add(gvk schema.GroupVersionKind, namespace string) {
	gk := gvk.GroupKind()
	if _, ok := k.gvks[gk]; !ok {
		k.gvks[gk] = gvk
	}
	if namespace != "" {
		k.namespaced[gk], k.namespaces[namespace] = true, true
	}
}

// Namespaces are the namespaces to look in, sorted.
func (k *ArgoKinds) Namespaces() []string {
	return slices.Sorted(maps.Keys(k.namespaces))
}

// Listed are the kinds to LIST in ns: all of them in the destination
// namespace (cluster-scoped kinds ignore it), the namespaced ones in
// another, so that a cluster-scoped kind is listed once.
func (k *ArgoKinds) Listed(ns string) []schema.GroupVersionKind {
	out := make([]schema.GroupVersionKind, 0, len(k.gvks))
	for gk, gvk := range k.gvks {
		if ns == k.dest || k.namespaced[gk] {
			out = append(out, gvk)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
