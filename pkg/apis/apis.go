// Package apis knows which built-in Kubernetes API versions each Kubernetes
// release serves: the removals and deprecations of the Kubernetes deprecated
// API migration guide (kubernetes.io/docs/reference/using-api/deprecation-guide),
// up to the newest minor the tool knows.
package apis

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NewestMinor is the newest Kubernetes minor (1.x) this tool knows; offline
// renders target it unless told otherwise.
const NewestMinor = 37

// Change is one row of the table: a kind in a group version (or, with Kind
// empty, the whole group version) that is deprecated from one minor and no
// longer served from another.
type Change struct {
	GroupVersion string // "policy/v1beta1"; "v1" for the core group
	Kind         string // "" for every kind of GroupVersion
	// Deprecated is the minor from which the API server warns on use; 0 if
	// never deprecated.
	Deprecated int
	// Removed is the first minor that does not serve it; 0 if still served.
	Removed int
	// Replacement names what to use instead ("policy/v1 PodDisruptionBudget"),
	// or says there is none.
	Replacement string
}

// table: rows for single kinds come before the rows for their whole group
// version; Find takes the first row that matches.
var table = []Change{
	// 1.16
	{"extensions/v1beta1", "DaemonSet", 9, 16, "apps/v1 DaemonSet"},
	{"extensions/v1beta1", "Deployment", 9, 16, "apps/v1 Deployment"},
	{"extensions/v1beta1", "ReplicaSet", 9, 16, "apps/v1 ReplicaSet"},
	{"extensions/v1beta1", "NetworkPolicy", 9, 16, "networking.k8s.io/v1 NetworkPolicy"},
	{"extensions/v1beta1", "PodSecurityPolicy", 11, 16, "policy/v1beta1 PodSecurityPolicy (itself removed in 1.25: use Pod Security Admission)"},
	{"apps/v1beta1", "", 9, 16, "apps/v1"},
	{"apps/v1beta2", "", 9, 16, "apps/v1"},
	// 1.22
	{"extensions/v1beta1", "Ingress", 14, 22, "networking.k8s.io/v1 Ingress"},
	{"extensions/v1beta1", "", 14, 22, "the kind's group in v1 (apps/v1, networking.k8s.io/v1)"},
	{"networking.k8s.io/v1beta1", "Ingress", 19, 22, "networking.k8s.io/v1 Ingress"},
	{"networking.k8s.io/v1beta1", "IngressClass", 19, 22, "networking.k8s.io/v1 IngressClass"},
	{"admissionregistration.k8s.io/v1beta1", "MutatingWebhookConfiguration", 16, 22, "admissionregistration.k8s.io/v1 MutatingWebhookConfiguration"},
	{"admissionregistration.k8s.io/v1beta1", "ValidatingWebhookConfiguration", 16, 22, "admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration"},
	{"apiextensions.k8s.io/v1beta1", "", 16, 22, "apiextensions.k8s.io/v1 CustomResourceDefinition"},
	{"apiregistration.k8s.io/v1beta1", "", 19, 22, "apiregistration.k8s.io/v1 APIService"},
	{"authentication.k8s.io/v1beta1", "TokenReview", 19, 22, "authentication.k8s.io/v1 TokenReview"},
	{"authorization.k8s.io/v1beta1", "", 19, 22, "authorization.k8s.io/v1"},
	{"certificates.k8s.io/v1beta1", "CertificateSigningRequest", 19, 22, "certificates.k8s.io/v1 CertificateSigningRequest"},
	{"coordination.k8s.io/v1beta1", "Lease", 19, 22, "coordination.k8s.io/v1 Lease"},
	{"rbac.authorization.k8s.io/v1beta1", "", 17, 22, "rbac.authorization.k8s.io/v1"},
	{"rbac.authorization.k8s.io/v1alpha1", "", 17, 22, "rbac.authorization.k8s.io/v1"},
	{"scheduling.k8s.io/v1beta1", "", 14, 22, "scheduling.k8s.io/v1 PriorityClass"},
	{"scheduling.k8s.io/v1alpha1", "", 14, 22, "scheduling.k8s.io/v1 PriorityClass"},
	{"storage.k8s.io/v1beta1", "CSIDriver", 19, 22, "storage.k8s.io/v1 CSIDriver"},
	{"storage.k8s.io/v1beta1", "CSINode", 19, 22, "storage.k8s.io/v1 CSINode"},
	{"storage.k8s.io/v1beta1", "StorageClass", 19, 22, "storage.k8s.io/v1 StorageClass"},
	{"storage.k8s.io/v1beta1", "VolumeAttachment", 19, 22, "storage.k8s.io/v1 VolumeAttachment"},
	// 1.25
	{"batch/v1beta1", "", 21, 25, "batch/v1 CronJob"},
	{"discovery.k8s.io/v1beta1", "", 21, 25, "discovery.k8s.io/v1 EndpointSlice"},
	{"events.k8s.io/v1beta1", "", 22, 25, "events.k8s.io/v1 Event"},
	{"autoscaling/v2beta1", "", 22, 25, "autoscaling/v2 HorizontalPodAutoscaler"},
	{"policy/v1beta1", "PodSecurityPolicy", 21, 25, "none: PodSecurityPolicy is gone; use Pod Security Admission (pod-security.kubernetes.io labels on the namespace)"},
	{"policy/v1beta1", "", 21, 25, "policy/v1 PodDisruptionBudget"},
	{"node.k8s.io/v1beta1", "", 20, 25, "node.k8s.io/v1 RuntimeClass"},
	// 1.26
	{"flowcontrol.apiserver.k8s.io/v1beta1", "", 23, 26, "flowcontrol.apiserver.k8s.io/v1"},
	{"autoscaling/v2beta2", "", 23, 26, "autoscaling/v2 HorizontalPodAutoscaler"},
	// 1.27
	{"storage.k8s.io/v1beta1", "CSIStorageCapacity", 24, 27, "storage.k8s.io/v1 CSIStorageCapacity"},
	// 1.29
	{"flowcontrol.apiserver.k8s.io/v1beta2", "", 26, 29, "flowcontrol.apiserver.k8s.io/v1"},
	// 1.32
	{"flowcontrol.apiserver.k8s.io/v1beta3", "", 29, 32, "flowcontrol.apiserver.k8s.io/v1"},
	// Deprecated, still served.
	{"v1", "ComponentStatus", 19, 0, "none (query the components' health endpoints)"},
	{"v1", "Endpoints", 33, 0, "discovery.k8s.io/v1 EndpointSlice"},
}

// Find returns the row for a kind in a group version ("apps/v1beta2",
// "StatefulSet"), or nil when it was never deprecated.
func Find(groupVersion, kind string) *Change {
	var gvRow *Change
	for i := range table {
		r := &table[i]
		if r.GroupVersion != groupVersion {
			continue
		}
		if r.Kind == kind {
			return r
		}
		if r.Kind == "" && gvRow == nil {
			gvRow = r
		}
	}
	return gvRow
}

// RemovedIn reports whether the row's API is not served by minor.
func (c *Change) RemovedIn(minor int) bool { return c != nil && c.Removed > 0 && minor >= c.Removed }

// DeprecatedIn reports whether the row's API is served by minor, with a
// deprecation warning.
func (c *Change) DeprecatedIn(minor int) bool {
	return c != nil && c.Deprecated > 0 && minor >= c.Deprecated && !c.RemovedIn(minor)
}

// GroupVersionServed reports whether a Kubernetes minor serves the group version at all
// (every kind of it removed means it is not served).
func GroupVersionServed(groupVersion string, minor int) bool {
	for i := range table {
		if r := &table[i]; r.GroupVersion == groupVersion && r.Kind == "" {
			return !r.RemovedIn(minor)
		}
	}
	return true
}

// RemovedMessage says that gvk is not served by minor and what to use.
func (c *Change) RemovedMessage(gvk schema.GroupVersionKind, minor int) string {
	return fmt.Sprintf("%s %s was removed in Kubernetes 1.%d (target 1.%d does not serve it): use %s",
		gvk.GroupVersion(), gvk.Kind, c.Removed, minor, c.Replacement)
}

// DeprecatedMessage says that gvk is deprecated in minor and what to use.
func (c *Change) DeprecatedMessage(gvk schema.GroupVersionKind, minor int) string {
	msg := fmt.Sprintf("%s %s is deprecated since Kubernetes 1.%d", gvk.GroupVersion(), gvk.Kind, c.Deprecated)
	if c.Removed > 0 {
		msg += fmt.Sprintf(" and removed in 1.%d", c.Removed)
	}
	return msg + ": use " + c.Replacement
}

// ParseMinor returns the minor of a Kubernetes 1.x version ("1.24.0",
// "v1.24", "v1.30.2-gke.1"): the tables speak in minors.
func ParseMinor(version string) (int, error) {
	v := strings.TrimPrefix(strings.TrimSpace(version), "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 || parts[0] != "1" {
		return 0, fmt.Errorf("kubernetes version %q: want 1.MINOR[.PATCH]", version)
	}
	digits := parts[1]
	if i := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		digits = digits[:i]
	}
	m, err := strconv.Atoi(digits)
	if err != nil {
		return 0, fmt.Errorf("kubernetes version %q: want 1.MINOR[.PATCH]", version)
	}
	return m, nil
}
