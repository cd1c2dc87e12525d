package predict

import (
	"context"

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
