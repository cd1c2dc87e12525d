package predict

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// UpdateWarnings returns the warnings the API server's update strategy
// returns for an update that stores obj, whatever the update changed, for
// the kinds Derive predicts whose strategy warns about the whole object:
// a Service (its WarningsOnUpdate is GetWarningsForService of the object
// stored). The other derived kinds warn about nothing a derived change can
// reach (ConfigMap, Opaque Secret, PodDisruptionBudget,
// HorizontalPodAutoscaler and Ingress never; ServiceAccount only when the
// update newly sets its mountable-secrets annotation, which is not
// derived; Deployment, DaemonSet and Job only when the update bumps the
// generation, which labels and payloads do not). A derived change with a
// warning would lose the server's words, so the caller asks instead.
func UpdateWarnings(obj *unstructured.Unstructured) []string {
	gvk := obj.GroupVersionKind()
	if gvk.Group != "" || gvk.Kind != "Service" {
		return nil
	}
	var svc corev1.Service
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &svc); err != nil {
		return []string{"the Service cannot be read: " + err.Error()}
	}
	return serviceWarnings(&svc)
}

// serviceWarnings is GetWarningsForService (k8s.io/kubernetes
// pkg/api/service/warnings.go, 1.37), check for check, on the versioned
// Service: the fields it reads are the same in both forms.
func serviceWarnings(svc *corev1.Service) []string {
	var warnings []string
	spec := &svc.Spec
	if _, ok := svc.Annotations[corev1.DeprecatedAnnotationTopologyAwareHints]; ok {
		warnings = append(warnings, fmt.Sprintf("annotation %s is deprecated, please use %s instead", corev1.DeprecatedAnnotationTopologyAwareHints, corev1.AnnotationTopologyMode))
	}
	if spec.ClusterIP != "" && spec.ClusterIP != corev1.ClusterIPNone {
		for i, ip := range spec.ClusterIPs {
			warnings = append(warnings, validation.GetWarningsForIP(field.NewPath("spec").Child("clusterIPs").Index(i), ip)...)
		}
	}
	headless := spec.Type == corev1.ServiceTypeClusterIP && spec.ClusterIP == corev1.ClusterIPNone
	if headless {
		if spec.LoadBalancerIP != "" {
			warnings = append(warnings, "spec.loadBalancerIP is ignored for headless services")
		}
		if len(spec.ExternalIPs) > 0 {
			warnings = append(warnings, "spec.externalIPs is ignored for headless services")
		}
		if spec.SessionAffinity != corev1.ServiceAffinityNone {
			warnings = append(warnings, "spec.SessionAffinity is ignored for headless services")
		}
	}
	for i, ip := range spec.ExternalIPs {
		warnings = append(warnings, validation.GetWarningsForIP(field.NewPath("spec").Child("externalIPs").Index(i), ip)...)
	}
	if len(spec.ExternalIPs) > 0 && !headless && spec.Type != corev1.ServiceTypeExternalName {
		warnings = append(warnings, "spec.externalIPs is deprecated and may no longer be implemented in some clusters")
	}
	if spec.LoadBalancerIP != "" {
		warnings = append(warnings, validation.GetWarningsForIP(field.NewPath("spec").Child("loadBalancerIP"), spec.LoadBalancerIP)...)
	}
	for i, cidr := range spec.LoadBalancerSourceRanges {
		warnings = append(warnings, validation.GetWarningsForCIDR(field.NewPath("spec").Child("loadBalancerSourceRanges").Index(i), cidr)...)
	}
	if spec.Type == corev1.ServiceTypeExternalName && len(spec.ExternalIPs) > 0 {
		warnings = append(warnings, fmt.Sprintf("spec.externalIPs is ignored when spec.type is %q", corev1.ServiceTypeExternalName))
	}
	if spec.Type != corev1.ServiceTypeExternalName && spec.ExternalName != "" {
		warnings = append(warnings, fmt.Sprintf("spec.externalName is ignored when spec.type is not %q", corev1.ServiceTypeExternalName))
	}
	if spec.TrafficDistribution != nil && *spec.TrafficDistribution == corev1.ServiceTrafficDistributionPreferClose {
		warnings = append(warnings, fmt.Sprintf("spec.trafficDistribution: %q is deprecated; use %q", corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameZone))
	}
	return warnings
}
