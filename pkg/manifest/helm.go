package manifest

import (
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Helm's ownership and policy metadata (helm pkg/action/validate.go,
// pkg/action/resource_policy.go).
const (
	ManagedByLabel             = "app.kubernetes.io/managed-by"
	ReleaseNameAnnotation      = "meta.helm.sh/release-name"
	ReleaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
	ResourcePolicyAnnotation   = "helm.sh/resource-policy"
	ResourcePolicyKeep         = "keep"
	managedByHelm              = "Helm"
)

// SetHelmOwnership adds the metadata Helm's kube client adds to every object
// it applies (setMetadataVisitor), so a prediction or a dry-run create sees
// the object Helm will send. obj gets a metadata map of its own: another
// object may share the one it has (see Parsed).
func SetHelmOwnership(obj *unstructured.Unstructured, release, namespace string) {
	if md, ok := obj.Object["metadata"].(map[string]interface{}); ok {
		obj.Object["metadata"] = maps.Clone(md)
	}
	obj.SetLabels(with(obj.GetLabels(), ManagedByLabel, managedByHelm))
	obj.SetAnnotations(with(with(obj.GetAnnotations(),
		ReleaseNameAnnotation, release),
		ReleaseNamespaceAnnotation, namespace))
}

// Kept reports whether Helm leaves obj in the cluster when it is dropped
// from the chart (helm.sh/resource-policy: keep).
func Kept(obj *unstructured.Unstructured) bool {
	return obj.GetAnnotations()[ResourcePolicyAnnotation] == ResourcePolicyKeep
}

// with sets m[k] = v, allocating m if needed.
func with(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}
