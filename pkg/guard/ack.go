package guard

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Guards reports whether the guard refuses the unacknowledged DELETE of
// obj, an object of a Helm release, of kind kind; orphan says whether the
// delete orphans dependants (--cascade=orphan). It is the policy's
// destroys-data condition over the guarded kinds, read from the live object.
func Guards(kind schema.GroupKind, obj *unstructured.Unstructured, orphan bool) bool {
	for _, g := range guardedKinds() {
		if g.kind != kind {
			continue
		}
		switch g.resource {
		case "persistentvolumes":
			policy, _, _ := unstructured.NestedString(obj.Object, "spec", "persistentVolumeReclaimPolicy")
			return policy == "Delete"
		case "statefulsets":
			return !orphan
		}
		return true
	}
	return false
}

// GuardedKind reports whether the guard refuses some deletes of kind: the
// objects worth reading before Guards decides.
func GuardedKind(kind schema.GroupKind) bool {
	for _, g := range guardedKinds() {
		if g.kind == kind {
			return true
		}
	}
	return false
}

// AckTarget is one delete the gate acknowledged that Helm is about to send.
type AckTarget struct {
	GVK       schema.GroupVersionKind
	Namespace string
	Name      string
	// ResourceVersion is the live object's as planned: the object is
	// acknowledged only if it has not changed since (the acknowledgement was
	// given for that object).
	ResourceVersion string
}

func (t AckTarget) String() string {
	s := t.GVK.Kind + "/"
	if t.Namespace != "" {
		s += t.Namespace + "/"
	}
	return s + t.Name
}

// Acks are the acknowledgements written for the guard: the objects
// annotated with AckAnnotation equal to their UID.
type Acks struct {
	r       Resources
	written []written
}

type written struct {
	target AckTarget
	uid    types.UID
}

// Names lists the annotated objects.
func (a *Acks) Names() []string {
	var out []string
	for _, w := range a.written {
		out = append(out, w.target.String())
	}
	return out
}

// Acknowledge writes the guard's acknowledgement on each target the guard
// refuses (Guards, orphan as for every delete of the run): a merge patch
// of AckAnnotation = the object's UID, with the UID and the planned
// resourceVersion as preconditions, field manager FieldManager. A target
// already gone is skipped. On error, what was written is removed again
// (best effort) and the error says what was left. Written whether or not
// the guard is installed: the annotation acknowledges nothing else.
func Acknowledge(ctx context.Context, r Resources, targets []AckTarget, orphan bool) (*Acks, error) {
	acks := &Acks{r: r}
	for _, t := range targets {
		if !GuardedKind(t.GVK.GroupKind()) {
			continue
		}
		if err := acks.one(ctx, t, orphan); err != nil {
			if left := acks.Revoke(context.WithoutCancel(ctx)); left != "" {
				err = fmt.Errorf("%w; %s", err, left)
			}
			return nil, err
		}
	}
	return acks, nil
}

func (a *Acks) one(ctx context.Context, t AckTarget, orphan bool) error {
	ri, _, err := a.r.Resource(t.GVK, t.Namespace)
	if err != nil {
		return nil // its kind is no longer served: nothing to delete
	}
	obj, err := ri.Get(ctx, t.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("%s: reading it to acknowledge its delete to the guard: %w", t, err)
	case !Guards(t.GVK.GroupKind(), obj, orphan):
		return nil
	case t.ResourceVersion != "" && obj.GetResourceVersion() != t.ResourceVersion:
		return fmt.Errorf("%s changed since the plan (resourceVersion %s, planned %s): its delete is not acknowledged to the guard; plan again", t, obj.GetResourceVersion(), t.ResourceVersion)
	}
	uid := obj.GetUID()
	if obj.GetAnnotations()[AckAnnotation] == string(uid) {
		return nil // acknowledged already, by someone else: theirs to remove
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": uid, "resourceVersion": obj.GetResourceVersion(),
		"annotations": map[string]any{AckAnnotation: string(uid)},
	}})
	if err != nil {
		return fmt.Errorf("%s: %w", t, err)
	}
	if _, err := ri.Patch(ctx, t.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("%s: writing the guard's acknowledgement %s: %w", t, AckAnnotation, err)
	}
	a.written = append(a.written, written{target: t, uid: uid})
	return nil
}

// Revoke removes the acknowledgements from the objects still there (the
// same object: a UID precondition), best effort; it returns "" when none
// is left, else a sentence naming those left.
func (a *Acks) Revoke(ctx context.Context) string {
	if a == nil {
		return ""
	}
	var left []string
	for _, w := range a.written {
		if err := a.revoke(ctx, w); err != nil {
			left = append(left, fmt.Sprintf("%s (%v)", w.target, err))
		}
	}
	a.written = nil
	if len(left) == 0 {
		return ""
	}
	return fmt.Sprintf("the guard's acknowledgement %s is left on: %s; remove it with kubectl annotate ... %s-", AckAnnotation, strings.Join(left, ", "), AckAnnotation)
}

func (a *Acks) revoke(ctx context.Context, w written) error {
	ri, _, err := a.r.Resource(w.target.GVK, w.target.Namespace)
	if err != nil {
		return nil // the kind went with its CRD
	}
	obj, err := ri.Get(ctx, w.target.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	case obj.GetUID() != w.uid || obj.GetAnnotations()[AckAnnotation] != string(w.uid):
		return nil // another object now, or no longer acknowledged
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": w.uid, "annotations": map[string]any{AckAnnotation: nil},
	}})
	if err != nil {
		return err
	}
	_, err = ri.Patch(ctx, w.target.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
