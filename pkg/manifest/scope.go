package manifest

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// clusterScoped are the built-in cluster-scoped kinds (group/kind), the scope
// knowledge used when no cluster can be asked (offline mode).
var clusterScoped = map[schema.GroupKind]bool{
	{Kind: "Namespace"}: true, {Kind: "Node"}: true, {Kind: "PersistentVolume"}: true, {Kind: "ComponentStatus"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                        true,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                               true,
	{Group: "storage.k8s.io", Kind: "VolumeAttributesClass"}:                          true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "networking.k8s.io", Kind: "IPAddress"}:                                   true,
	{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:                                 true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:                 true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
	{Group: "resource.k8s.io", Kind: "DeviceClass"}:                                   true,
}

// StaticScoper knows the scope of built-in kinds without a cluster; other
// kinds are unknown (Split then asks the render's CRDs, else assumes
// namespaced, as most custom resources are).
type StaticScoper struct{}

// IsNamespaced implements Scoper.
func (StaticScoper) IsNamespaced(gvk schema.GroupVersionKind) (bool, bool, error) {
	if clusterScoped[gvk.GroupKind()] {
		return false, true, nil
	}
	if gvk.Group == "" || !strings.Contains(gvk.Group, ".") {
		// Core and built-in groups without dots are namespaced unless listed.
		return true, true, nil
	}
	if strings.HasSuffix(gvk.Group, ".k8s.io") {
		return true, true, nil
	}
	return false, false, nil
}
