package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
)

// Resources gives the client of a kind, or an error when the cluster does
// not serve it (live.Cluster is one).
type Resources interface {
	Resource(gvk schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, *meta.RESTMapping, error)
}

// ErrNotServed is matched (errors.Is) by the error of a cluster that does
// not serve admissionregistration.k8s.io/v1 policies (before 1.30).
var ErrNotServed = errors.New("the cluster does not serve admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (Kubernetes 1.30 or later); the guard cannot be installed there")

// kinds are the guard's objects' kinds, in the order Objects returns
// and install applies them; the marker's two are optional: a cluster
// before 1.36 serves no MutatingAdmissionPolicy.
var kinds = []struct {
	gvk      schema.GroupVersionKind
	optional bool
}{{PolicyGVK, false}, {BindingGVK, false}, {MarkerGVK, true}, {MarkerBindingGVK, true}}

// clients returns the client of each of kinds, nil for an optional kind
// the cluster does not serve, or ErrNotServed.
func clients(r Resources) ([]dynamic.ResourceInterface, error) {
	out := make([]dynamic.ResourceInterface, len(kinds))
	for i, k := range kinds {
		res, _, err := r.Resource(k.gvk, "")
		switch {
		case err != nil && k.optional:
		case err != nil:
			return nil, fmt.Errorf("%w (%v)", ErrNotServed, err)
		default:
			out[i] = res
		}
	}
	return out, nil
}

// served is one of the guard's objects, named, with its kind's client
// (nil: an optional kind the cluster does not serve).
type served struct {
	client dynamic.ResourceInterface
	obj    *unstructured.Unstructured
	what   string
}

// servedObjects are the guard's objects (Objects) with their clients
// (clients), in the order install applies them.
func servedObjects(r Resources) ([]served, error) {
	res, err := clients(r)
	if err != nil {
		return nil, err
	}
	objs, err := Objects()
	if err != nil {
		return nil, err
	}
	out := make([]served, len(res))
	for i, obj := range objs {
		out[i] = served{client: res[i], obj: obj, what: obj.GetKind() + " " + obj.GetName()}
	}
	return out, nil
}

// markerMissing says what a cluster without MutatingAdmissionPolicy lacks.
const markerMissing = "not served by this cluster (MutatingAdmissionPolicy needs Kubernetes 1.36): claims StatefulSets make from now on are not marked as guarded; guard install marks those already there, or label their namespaces " + ProtectLabel + "=true"

// ours reports whether obj carries the guard's labels.
func ours(obj *unstructured.Unstructured) bool {
	l := obj.GetLabels()
	return l[managedByLabel] == managedBy && l[ComponentLabel] == component
}

// Install applies the policy, then the binding (server-side apply, field
// manager FieldManager, conflicts forced: the guard's fields are the
// guard's). An object of the same name that is not the guard's is left
// alone and refused. It returns a line per object applied.
func Install(ctx context.Context, r Resources) ([]string, error) {
	all, err := servedObjects(r)
	if err != nil {
		return nil, err
	}
	force := true
	var lines []string
	// All checked before any is written: nothing changes when one is refused.
	for _, o := range all {
		c, what := o.client, o.what
		if c == nil {
			continue
		}
		existing, err := c.Get(ctx, o.obj.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("%s: reading it: %w", what, err)
		case !ours(existing):
			return nil, fmt.Errorf("%s exists and is not the guard's (it lacks the labels %s): remove or rename it first; nothing was changed", what, Selector)
		case existing.GetDeletionTimestamp() != nil:
			return nil, fmt.Errorf("%s is being deleted (%s): it stays in force while its finalizer %s holds it; run guard uninstall to finish removing the guard, then guard install; nothing was changed",
				what, existing.GetDeletionTimestamp().UTC().Format(time.RFC3339), Finalizer)
		}
	}
	for _, o := range all {
		c, obj, what := o.client, o.obj, o.what
		if c == nil {
			lines = append(lines, what+": "+markerMissing)
			continue
		}
		body, err := json.Marshal(obj.Object)
		if err != nil {
			return lines, fmt.Errorf("%s: %w", what, err)
		}
		if _, err := c.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: FieldManager, Force: &force}); err != nil {
			return lines, fmt.Errorf("%s: applying it: %w", what, err)
		}
		lines = append(lines, what+" applied")
	}
	return lines, nil
}

// Status says whether the guard is installed, and whether it is this
// version's: one line per object, and whether all is in force.
func Status(ctx context.Context, r Resources) (lines []string, current bool, err error) {
	all, err := servedObjects(r)
	if err != nil {
		return nil, false, err
	}
	current = true
	for _, o := range all {
		c, want, what := o.client, o.obj, o.what
		if c == nil {
			lines = append(lines, what+": "+markerMissing)
			continue
		}
		got, err := c.Get(ctx, want.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			lines = append(lines, what+": not installed")
			current = false
			continue
		case err != nil:
			return nil, false, fmt.Errorf("%s: reading it: %w", what, err)
		case !ours(got):
			lines = append(lines, what+": exists but is not the guard's (no labels "+Selector+")")
			current = false
			continue
		}
		line := what + ": installed"
		if d := want.GetAnnotations()[SpecAnnotation]; (d != "" && got.GetAnnotations()[SpecAnnotation] != d) || !slices.Contains(got.GetFinalizers(), Finalizer) {
			line += ", of another version (guard install replaces it)"
			current = false
		}
		if ts := got.GetDeletionTimestamp(); ts != nil {
			line += fmt.Sprintf(", being deleted since %s but still in force: its finalizer %s holds it (guard uninstall removes the guard)", ts.UTC().Format(time.RFC3339), Finalizer)
			current = false
		}
		if n := typeWarnings(got); n > 0 {
			line += fmt.Sprintf(", %d type-checking warnings (kubectl get %s %s -o yaml)", n, strings.ToLower(want.GetKind()), Name)
		}
		lines = append(lines, line)
	}
	return lines, current, nil
}

// typeWarnings counts the API server's type-checking warnings of a policy.
func typeWarnings(obj *unstructured.Unstructured) int {
	w, _, _ := unstructured.NestedSlice(obj.Object, "status", "typeChecking", "expressionWarnings")
	return len(w)
}

// Uninstall deletes exactly the objects that carry the guard's labels,
// the binding first, each with a precondition on the UID it read.
func Uninstall(ctx context.Context, r Resources) ([]string, error) {
	res, err := clients(r)
	if err != nil {
		return nil, err
	}
	var lines []string
	// Each binding before its policy.
	for _, i := range []int{1, 0, 3, 2} {
		c, kind := res[i], kinds[i].gvk.Kind
		if c == nil {
			continue
		}
		list, err := c.List(ctx, metav1.ListOptions{LabelSelector: Selector})
		if err != nil {
			return lines, fmt.Errorf("listing the guard's %ss: %w", kind, err)
		}
		for j := range list.Items {
			obj := &list.Items[j]
			what := kind + " " + obj.GetName()
			uid := obj.GetUID()
			err := c.Delete(ctx, obj.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) {
				return lines, fmt.Errorf("%s: deleting it: %w", what, err)
			}
			// Deleted, it stays in force until its finalizer goes.
			if err := releaseFinalizer(ctx, c, obj.GetName(), uid); err != nil {
				return lines, fmt.Errorf("%s: deleted, but still in force: removing its finalizer %s: %w", what, Finalizer, err)
			}
			lines = append(lines, what+" deleted")
		}
	}
	return lines, nil
}

// releaseFinalizer removes Finalizer from the object name of UID uid,
// keeping any other finalizer (the list is replaced whole: the read
// resourceVersion is a precondition, retried on conflict). An object gone,
// or another of the same name, is left alone.
func releaseFinalizer(ctx context.Context, res dynamic.ResourceInterface, name string, uid types.UID) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := res.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case obj.GetUID() != uid || !slices.Contains(obj.GetFinalizers(), Finalizer):
			return nil
		}
		rest := slices.DeleteFunc(obj.GetFinalizers(), func(f string) bool { return f == Finalizer })
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"uid": uid, "resourceVersion": obj.GetResourceVersion(), "finalizers": rest,
		}})
		if err != nil {
			return err
		}
		_, err = res.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}
