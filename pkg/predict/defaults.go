package predict

import (
	"math"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// setDefaults fills in what the API server's defaulting fills in on every
// write, for the kinds whose verdicts depend on it: workloads and their pod
// templates, claim templates, Services, claims, volumes, StorageClasses,
// Secrets, Jobs, CronJobs, role bindings and NetworkPolicies. It mirrors k8s.io/kubernetes pkg/apis/*/v1
// defaults.go (1.37) with the feature gates at their defaults; a field a
// chart sets to its default then compares equal to the field left unset,
// as it does on the server. Defaults that depend on live state (an
// allocated cluster IP, the default StorageClass admission picks) are not
// here: the catalogue names those causes.
func setDefaults(obj runtime.Object) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		defaultDeployment(&o.Spec)
	case *appsv1.StatefulSet:
		defaultStatefulSet(&o.Spec)
	case *appsv1.DaemonSet:
		defaultDaemonSet(&o.Spec)
	case *appsv1.ReplicaSet:
		defaultReplicas(&o.Spec.Replicas)
		defaultPodTemplate(&o.Spec.Template)
	case *batchv1.Job:
		defaultJobSpec(&o.Spec)
		if o.Spec.Template.Labels != nil && len(o.Labels) == 0 {
			o.Labels = o.Spec.Template.Labels
		}
	case *batchv1.CronJob:
		defaultCronJob(&o.Spec)
	case *corev1.Pod:
		defaultPod(&o.Spec)
	case *corev1.PodTemplate:
		defaultPodTemplate(&o.Template)
	case *corev1.ReplicationController:
		defaultReplicas(&o.Spec.Replicas)
		if o.Spec.Template != nil {
			defaultPodTemplate(o.Spec.Template)
		}
	case *corev1.Service:
		defaultService(o)
	case *corev1.PersistentVolumeClaim:
		defaultClaim(o)
	case *corev1.PersistentVolume:
		defaultPersistentVolume(&o.Spec)
	case *corev1.Secret:
		if o.Type == "" {
			o.Type = corev1.SecretTypeOpaque
		}
	case *corev1.ConfigMap:
		if o.Data == nil {
			o.Data = map[string]string{}
		}
	case *rbacv1.RoleBinding:
		defaultRoleRef(&o.RoleRef)
		defaultSubjects(o.Subjects)
	case *rbacv1.ClusterRoleBinding:
		defaultRoleRef(&o.RoleRef)
		defaultSubjects(o.Subjects)
	case *networkingv1.NetworkPolicy:
		defaultNetworkPolicy(&o.Spec)
	case *storagev1.StorageClass:
		if o.ReclaimPolicy == nil {
			o.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimDelete)
		}
		if o.VolumeBindingMode == nil {
			o.VolumeBindingMode = ptr.To(storagev1.VolumeBindingImmediate)
		}
	}
}

func defaultDeployment(s *appsv1.DeploymentSpec) {
	defaultReplicas(&s.Replicas)
	if s.Strategy.Type == "" {
		s.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if s.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if s.Strategy.RollingUpdate == nil {
			s.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		defaultIntOrString(&s.Strategy.RollingUpdate.MaxUnavailable, intstr.FromString("25%"))
		defaultIntOrString(&s.Strategy.RollingUpdate.MaxSurge, intstr.FromString("25%"))
	}
	defaultInt32(&s.RevisionHistoryLimit, 10)
	defaultInt32(&s.ProgressDeadlineSeconds, 600)
	defaultPodTemplate(&s.Template)
}

func defaultStatefulSet(s *appsv1.StatefulSetSpec) {
	if s.PodManagementPolicy == "" {
		s.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if s.UpdateStrategy.Type == "" {
		s.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if s.UpdateStrategy.RollingUpdate == nil {
			s.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if s.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && s.UpdateStrategy.RollingUpdate != nil {
		defaultInt32(&s.UpdateStrategy.RollingUpdate.Partition, 0)
	}
	if s.PersistentVolumeClaimRetentionPolicy == nil {
		s.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	if p := s.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted == "" {
		p.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if p := s.PersistentVolumeClaimRetentionPolicy; p.WhenScaled == "" {
		p.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	defaultReplicas(&s.Replicas)
	defaultInt32(&s.RevisionHistoryLimit, 10)
	defaultPodTemplate(&s.Template)
	for i := range s.VolumeClaimTemplates {
		defaultClaim(&s.VolumeClaimTemplates[i])
	}
}

func defaultDaemonSet(s *appsv1.DaemonSetSpec) {
	if s.UpdateStrategy.Type == "" {
		s.UpdateStrategy.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if s.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if s.UpdateStrategy.RollingUpdate == nil {
			s.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		defaultIntOrString(&s.UpdateStrategy.RollingUpdate.MaxUnavailable, intstr.FromInt32(1))
		defaultIntOrString(&s.UpdateStrategy.RollingUpdate.MaxSurge, intstr.FromInt32(0))
	}
	defaultInt32(&s.RevisionHistoryLimit, 10)
	defaultPodTemplate(&s.Template)
}

func defaultCronJob(s *batchv1.CronJobSpec) {
	if s.ConcurrencyPolicy == "" {
		s.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if s.Suspend == nil {
		s.Suspend = ptr.To(false)
	}
	defaultInt32(&s.SuccessfulJobsHistoryLimit, 3)
	defaultInt32(&s.FailedJobsHistoryLimit, 1)
	defaultPodTemplate(&s.JobTemplate.Spec.Template)
}

// defaultPod is a bare Pod's: its template's, service links, and each
// container's requests defaulted to its limits.
func defaultPod(s *corev1.PodSpec) {
	defaultPodSpec(s)
	if s.EnableServiceLinks == nil {
		s.EnableServiceLinks = ptr.To(corev1.DefaultEnableServiceLinks)
	}
	for _, cs := range [][]corev1.Container{s.Containers, s.InitContainers} {
		for i := range cs {
			r := &cs[i].Resources
			for k, v := range r.Limits {
				if r.Requests == nil {
					r.Requests = corev1.ResourceList{}
				}
				if _, ok := r.Requests[k]; !ok {
					r.Requests[k] = v.DeepCopy()
				}
			}
		}
	}
}

func defaultPersistentVolume(s *corev1.PersistentVolumeSpec) {
	if s.PersistentVolumeReclaimPolicy == "" {
		s.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	}
	if s.VolumeMode == nil {
		s.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	defaultResources(s.Capacity)
}

func defaultNetworkPolicy(s *networkingv1.NetworkPolicySpec) {
	if len(s.PolicyTypes) == 0 {
		s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		if len(s.Egress) != 0 {
			s.PolicyTypes = append(s.PolicyTypes, networkingv1.PolicyTypeEgress)
		}
	}
	for i := range s.Ingress {
		defaultPolicyPorts(s.Ingress[i].Ports)
	}
	for i := range s.Egress {
		defaultPolicyPorts(s.Egress[i].Ports)
	}
}

func defaultReplicas(p **int32) { defaultInt32(p, 1) }

func defaultRoleRef(r *rbacv1.RoleRef) {
	if r.APIGroup == "" {
		r.APIGroup = rbacv1.GroupName
	}
}

func defaultSubjects(subjects []rbacv1.Subject) {
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}

func defaultPolicyPorts(ports []networkingv1.NetworkPolicyPort) {
	for i := range ports {
		if ports[i].Protocol == nil {
			ports[i].Protocol = ptr.To(corev1.ProtocolTCP)
		}
	}
}

func defaultInt32(p **int32, v int32) {
	if *p == nil {
		*p = ptr.To(v)
	}
}

func defaultIntOrString(p **intstr.IntOrString, v intstr.IntOrString) {
	if *p == nil {
		*p = &v
	}
}

func defaultJobSpec(s *batchv1.JobSpec) {
	if s.Completions == nil && s.Parallelism == nil {
		s.Completions = ptr.To[int32](1)
	}
	defaultInt32(&s.Parallelism, 1)
	if s.BackoffLimit == nil {
		if s.BackoffLimitPerIndex != nil {
			s.BackoffLimit = ptr.To[int32](math.MaxInt32)
		} else {
			s.BackoffLimit = ptr.To[int32](6)
		}
	}
	if s.CompletionMode == nil {
		s.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
	}
	if s.Suspend == nil {
		s.Suspend = ptr.To(false)
	}
	if s.PodReplacementPolicy == nil {
		if s.PodFailurePolicy != nil {
			s.PodReplacementPolicy = ptr.To(batchv1.Failed)
		} else {
			s.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
		}
	}
	if s.ManualSelector == nil {
		s.ManualSelector = ptr.To(false)
	}
	defaultPodTemplate(&s.Template)
}

func defaultClaim(c *corev1.PersistentVolumeClaim) {
	if c.Status.Phase == "" {
		c.Status.Phase = corev1.ClaimPending
	}
	if c.Spec.VolumeMode == nil {
		c.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	defaultResources(c.Spec.Resources.Limits)
	defaultResources(c.Spec.Resources.Requests)
}

// defaultResources rounds quantities up to milli precision.
func defaultResources(l corev1.ResourceList) {
	for k, v := range l {
		v.RoundUp(-3)
		l[k] = v
	}
}

func defaultService(o *corev1.Service) {
	s := &o.Spec
	if s.SessionAffinity == "" {
		s.SessionAffinity = corev1.ServiceAffinityNone
	}
	if s.SessionAffinity == corev1.ServiceAffinityNone {
		s.SessionAffinityConfig = nil
	}
	if s.SessionAffinity == corev1.ServiceAffinityClientIP &&
		(s.SessionAffinityConfig == nil || s.SessionAffinityConfig.ClientIP == nil || s.SessionAffinityConfig.ClientIP.TimeoutSeconds == nil) {
		s.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{
			TimeoutSeconds: ptr.To(corev1.DefaultClientIPServiceAffinitySeconds)}}
	}
	if s.Type == "" {
		s.Type = corev1.ServiceTypeClusterIP
	}
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	external := s.Type == corev1.ServiceTypeNodePort || s.Type == corev1.ServiceTypeLoadBalancer || len(s.ExternalIPs) > 0
	if external && s.ExternalTrafficPolicy == "" {
		s.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if s.InternalTrafficPolicy == nil && (s.Type == corev1.ServiceTypeNodePort || s.Type == corev1.ServiceTypeLoadBalancer || s.Type == corev1.ServiceTypeClusterIP) {
		s.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
	}
	if s.Type == corev1.ServiceTypeLoadBalancer && s.AllocateLoadBalancerNodePorts == nil {
		s.AllocateLoadBalancerNodePorts = ptr.To(true)
	}
}

func defaultPodTemplate(t *corev1.PodTemplateSpec) { defaultPodSpec(&t.Spec) }

func defaultPodSpec(s *corev1.PodSpec) {
	if s.ServiceAccountName == "" {
		s.ServiceAccountName = s.DeprecatedServiceAccount
	}
	s.DeprecatedServiceAccount = s.ServiceAccountName
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
	for i := range s.Volumes {
		defaultVolume(&s.Volumes[i])
	}
	for i := range s.InitContainers {
		defaultContainer(&s.InitContainers[i], s.HostNetwork)
	}
	for i := range s.Containers {
		defaultContainer(&s.Containers[i], s.HostNetwork)
	}
	defaultResources(s.Overhead)
}

func defaultContainer(c *corev1.Container, hostNetwork bool) {
	if c.ImagePullPolicy == "" {
		if imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = corev1.PullAlways
		} else {
			c.ImagePullPolicy = corev1.PullIfNotPresent
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if hostNetwork && p.HostPort == 0 {
			p.HostPort = p.ContainerPort
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p == nil {
			continue
		}
		if p.TimeoutSeconds == 0 {
			p.TimeoutSeconds = 1
		}
		if p.PeriodSeconds == 0 {
			p.PeriodSeconds = 10
		}
		if p.SuccessThreshold == 0 {
			p.SuccessThreshold = 1
		}
		if p.FailureThreshold == 0 {
			p.FailureThreshold = 3
		}
		defaultHTTPGet(p.HTTPGet)
	}
	if l := c.Lifecycle; l != nil {
		for _, h := range []*corev1.LifecycleHandler{l.PostStart, l.PreStop} {
			if h != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
	defaultResources(c.Resources.Limits)
	defaultResources(c.Resources.Requests)
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func defaultVolume(v *corev1.Volume) {
	if ptr.AllPtrFieldsNil(&v.VolumeSource) {
		v.VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	}
	mode := func(p **int32, v int32) { defaultInt32(p, v) }
	if s := v.Secret; s != nil {
		mode(&s.DefaultMode, corev1.SecretVolumeSourceDefaultMode)
	}
	if s := v.ConfigMap; s != nil {
		mode(&s.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if s := v.DownwardAPI; s != nil {
		mode(&s.DefaultMode, corev1.DownwardAPIVolumeSourceDefaultMode)
		for i := range s.Items {
			if f := s.Items[i].FieldRef; f != nil && f.APIVersion == "" {
				f.APIVersion = "v1"
			}
		}
	}
	if s := v.Projected; s != nil {
		mode(&s.DefaultMode, corev1.ProjectedVolumeSourceDefaultMode)
		for i := range s.Sources {
			if t := s.Sources[i].ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
				t.ExpirationSeconds = ptr.To[int64](3600)
			}
			if d := s.Sources[i].DownwardAPI; d != nil {
				for j := range d.Items {
					if f := d.Items[j].FieldRef; f != nil && f.APIVersion == "" {
						f.APIVersion = "v1"
					}
				}
			}
		}
	}
	if e := v.Ephemeral; e != nil && e.VolumeClaimTemplate != nil {
		s := &e.VolumeClaimTemplate.Spec
		if s.VolumeMode == nil {
			s.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
		}
	}
}

// imageTag is the tag the kubelet pulls for image, as
// k8s.io/kubernetes/pkg/util/parsers.ParseImageName reads it: "latest" when
// the reference has neither tag nor digest, "" when it has only a digest.
func imageTag(image string) string {
	name, _, hasDigest := strings.Cut(image, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		return name[i+1:]
	}
	if hasDigest {
		return ""
	}
	return "latest"
}
