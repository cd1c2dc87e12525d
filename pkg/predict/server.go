package predict

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// FieldManager is the manager name Helm 3 patches with, so the dry-run sees
// the same managedFields ownership as the real upgrade.
const FieldManager = "helm"

// dryRunAll is the only dryRun value the API server accepts.
var dryRunAll = []string{metav1.DryRunAll}

// DryRunPatch sends patch with dryRun=All and returns the object the server
// would store. Errors are the API server's (inspect them with apierrors).
func DryRunPatch(ctx context.Context, ri dynamic.ResourceInterface, name string, pt types.PatchType, patch []byte) (*unstructured.Unstructured, error) {
	return ri.Patch(ctx, name, pt, patch, metav1.PatchOptions{DryRun: dryRunAll, FieldManager: FieldManager})
}

// DryRunCreate sends obj as a create with dryRun=All. Validation runs before
// the storage layer, so for an object that exists an AlreadyExists answer
// means "a recreate would be accepted", while Invalid means it would not.
func DryRunCreate(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	obj = obj.DeepCopy()
	obj.SetResourceVersion("")
	return ri.Create(ctx, obj, metav1.CreateOptions{DryRun: dryRunAll, FieldManager: FieldManager})
}

// DryRunReplace sends obj as the PUT Helm's --force sends (Helm 4's
// --force-replace; helm pkg/kube updateResource → cli-runtime's
// resource.Helper.Replace with overwrite): the object of the new render
// whole, with the live object's resourceVersion (Helper.Replace reads it
// just before), field manager "helm", with dryRun=All. Whatever the render
// leaves out that the server does not fill in again on update is dropped:
// the server's answer says which, or refuses the object.
func DryRunReplace(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured, resourceVersion string) (*unstructured.Unstructured, error) {
	obj = obj.DeepCopy()
	obj.SetResourceVersion(resourceVersion)
	return ri.Update(ctx, obj, metav1.UpdateOptions{DryRun: dryRunAll, FieldManager: FieldManager})
}

// DryRunApply sends obj as a server-side apply with dryRun=All, as Helm 4
// applies a release recorded "ssa" (pkg/kube patchResourceServerSide): the
// whole object, content type application/apply-patch+yaml, field manager
// "helm", strict field validation, force only when forceConflicts. It
// returns the object the server would store; a conflict with another field
// manager is an apierrors.IsConflict error whose causes Conflicts reads.
func DryRunApply(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured, forceConflicts bool) (*unstructured.Unstructured, error) {
	return DryRunApplyAs(ctx, ri, obj, forceConflicts, FieldManager)
}

// DryRunApplyAs is DryRunApply as field manager manager (Argo CD's
// argocd-controller).
func DryRunApplyAs(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured, forceConflicts bool, manager string) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("serializing %s %q: %w", obj.GetKind(), obj.GetName(), err)
	}
	return ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
		DryRun: dryRunAll, FieldManager: manager, Force: &forceConflicts,
		FieldValidation: metav1.FieldValidationStrict,
	})
}

// Conflict is a field a server-side apply would take from another owner.
type Conflict struct {
	// Path is the field in the server's notation (.data.key,
	// .spec.template.spec.containers[name="app"].image).
	Path string
	// Manager is the name of the field manager that owns it
	// (someone-else, kubectl-edit).
	Manager string
}

// conflictWith matches the cause message of an apply conflict: conflict
// with "MANAGER"[ using VERSION[ at TIME]].
var conflictWith = regexp.MustCompile(`^conflict with ("(?:[^"\\]|\\.)*")`)

// Conflicts returns the field-manager conflicts of a server-side apply's
// error (nil when err is not one).
func Conflicts(err error) []Conflict {
	if !apierrors.IsConflict(err) {
		return nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return nil
	}
	var out []Conflict
	for _, c := range status.Status().Details.Causes {
		if c.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		manager := strings.TrimPrefix(c.Message, "conflict with ")
		if m := conflictWith.FindStringSubmatch(c.Message); m != nil {
			if name, uerr := strconv.Unquote(m[1]); uerr == nil {
				manager = name
			}
		}
		out = append(out, Conflict{Path: c.Field, Manager: manager})
	}
	return out
}
