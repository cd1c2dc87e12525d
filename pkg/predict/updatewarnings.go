package predict

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// UpdateWarns returns why the API server's update strategy warns, or may
// warn, about an update that stores obj whatever the update changes, or ""
// when it cannot. A strategy's WarningsOnUpdate runs on every update that
// reaches it, a label-only patch and a server-side apply that changes
// nothing (Helm 4 applies every object) alike, and some warn about the
// whole object stored: for those kinds the same checks run here
// (Service, StatefulSet, CronJob, NetworkPolicy, PersistentVolumeClaim),
// or, for kinds charts rarely hold, the kind alone is the answer. A
// derived change or no-op that the server would warn about would lose its
// words, so the caller asks instead. Other kinds warn only about what an
// update changes (a pod template when the generation moves, a
// ServiceAccount's mountable-secrets annotation newly set, a
// CustomResourceDefinition's newly unrecognized formats, a CSIDriver's
// token requests), which neither a derived change nor a no-op does, or
// never (ConfigMap, Opaque Secret, Pod, PodDisruptionBudget,
// HorizontalPodAutoscaler, Ingress).
func UpdateWarns(obj *unstructured.Unstructured) string {
	gvk := obj.GroupVersionKind()
	gk := gvk.GroupKind()
	if mayWarn[gk] || gk == (schema.GroupKind{Kind: "Secret"}) && secretType(obj) == string(corev1.SecretTypeTLS) {
		return "the server may warn about every update of a " + gk.Kind
	}
	check, ok := wholeObjectWarnings[gk]
	if !ok {
		return ""
	}
	warnings, err := check(obj)
	switch {
	case err != nil:
		return gk.Kind + " unreadable: " + err.Error()
	case len(warnings) > 0:
		return "the server warns about every update of this " + gk.Kind
	}
	return ""
}

// mayWarn are the built-in kinds whose update strategy warns about the
// whole object stored (Kubernetes 1.37 pkg/registry) that UpdateWarns
// does not check: their updates are asked.
var mayWarn = map[schema.GroupKind]bool{
	{Kind: "PersistentVolume"}: true,
	{Kind: "Node"}:             true,
	{Kind: "Endpoints"}:        true, // deprecated, warned about on every update
	{Group: "discovery.k8s.io", Kind: "EndpointSlice"}:                                true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "CSIStorageCapacity"}:                             true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "resource.k8s.io", Kind: "ResourceSlice"}:                                 true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}:          true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   true,
}

// wholeObjectWarnings are the checks of the update strategies that warn
// about the whole object stored, for the kinds charts commonly hold.
var wholeObjectWarnings = map[schema.GroupKind]func(*unstructured.Unstructured) ([]string, error){
	{Kind: "Service"}: func(obj *unstructured.Unstructured) ([]string, error) {
		var svc corev1.Service
		err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &svc)
		return serviceWarnings(&svc), err
	},
	{Kind: "PersistentVolumeClaim"}: func(obj *unstructured.Unstructured) ([]string, error) {
		var pvc corev1.PersistentVolumeClaim
		err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &pvc)
		return claimWarnings(&pvc), err
	},
	{Group: "apps", Kind: "StatefulSet"}: func(obj *unstructured.Unstructured) ([]string, error) {
		var sts appsv1.StatefulSet
		err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &sts)
		return statefulSetWarnings(&sts), err
	},
	{Group: "batch", Kind: "CronJob"}: func(obj *unstructured.Unstructured) ([]string, error) {
		var cj batchv1.CronJob
		err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &cj)
		if strings.Contains(cj.Spec.Schedule, "TZ") {
			return []string{"cannot use TZ or CRON_TZ in spec.spec.schedule, use timeZone instead"}, err
		}
		return nil, err
	},
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}: func(obj *unstructured.Unstructured) ([]string, error) {
		var np networkingv1.NetworkPolicy
		err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &np)
		return networkPolicyWarnings(&np), err
	},
}

func secretType(obj *unstructured.Unstructured) string {
	t, _, _ := unstructured.NestedString(obj.Object, "type")
	return t
}

// claimWarnings is GetWarningsForPersistentVolumeClaim (k8s.io/kubernetes
// pkg/api/persistentvolumeclaim/util.go, 1.37).
func claimWarnings(pvc *corev1.PersistentVolumeClaim) []string {
	var warnings []string
	if _, ok := pvc.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		warnings = append(warnings, "metadata.annotations["+corev1.BetaStorageClassAnnotation+"]: deprecated, use spec.storageClassName")
	}
	return append(warnings, claimSpecWarnings(field.NewPath("spec"), &pvc.Spec)...)
}

// claimSpecWarnings is GetWarningsForPersistentVolumeClaimSpec: a storage
// request or limit that is not a whole number of bytes.
func claimSpecWarnings(path *field.Path, spec *corev1.PersistentVolumeClaimSpec) []string {
	var warnings []string
	for what, list := range map[string]corev1.ResourceList{"requests": spec.Resources.Requests, "limits": spec.Resources.Limits} {
		if q, ok := list[corev1.ResourceStorage]; ok && q.MilliValue()%1000 != 0 {
			warnings = append(warnings, fmt.Sprintf("%s: fractional byte value %q is invalid, must be an integer", path.Child("resources", what).Key("storage"), q.String()))
		}
	}
	return warnings
}

// statefulSetWarnings are the StatefulSet strategy's warnings that do not
// depend on a generation bump: each claim template's, and a negative
// revisionHistoryLimit.
func statefulSetWarnings(sts *appsv1.StatefulSet) []string {
	var warnings []string
	for i := range sts.Spec.VolumeClaimTemplates {
		warnings = append(warnings, claimSpecWarnings(field.NewPath("spec", "volumeClaimTemplates").Index(i).Child("Spec"), &sts.Spec.VolumeClaimTemplates[i].Spec)...)
	}
	if l := sts.Spec.RevisionHistoryLimit; l != nil && *l < 0 {
		warnings = append(warnings, "spec.revisionHistoryLimit: a negative value retains all historical revisions")
	}
	return warnings
}

// networkPolicyWarnings is the NetworkPolicy strategy's: every ipBlock's
// CIDR and exceptions not in canonical form.
func networkPolicyWarnings(np *networkingv1.NetworkPolicy) []string {
	var warnings []string
	block := func(path *field.Path, b *networkingv1.IPBlock) {
		if b == nil {
			return
		}
		warnings = append(warnings, validation.GetWarningsForCIDR(path.Child("cidr"), b.CIDR)...)
		for k, except := range b.Except {
			warnings = append(warnings, validation.GetWarningsForCIDR(path.Child("except").Index(k), except)...)
		}
	}
	for i, rule := range np.Spec.Ingress {
		for j := range rule.From {
			block(field.NewPath("spec", "ingress").Index(i).Child("from").Index(j).Child("ipBlock"), rule.From[j].IPBlock)
		}
	}
	for i, rule := range np.Spec.Egress {
		for j := range rule.To {
			block(field.NewPath("spec", "egress").Index(i).Child("to").Index(j).Child("ipBlock"), rule.To[j].IPBlock)
		}
	}
	return warnings
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
