package predict

import (
	"fmt"
	"maps"
	"strings"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/jsonvalue"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// imageKinds are the pod controllers whose container image change Derive
// predicts, with the versioned type whose patch strategy the server
// merges Helm 3's patch by.
var imageKinds = map[schema.GroupKind]func() runtime.Object{
	{Group: "apps", Kind: "Deployment"}: func() runtime.Object { return &appsv1.Deployment{} },
}

// containerLists are the pod spec's lists of containers whose images may
// change.
var containerLists = []string{"initContainers", "containers"}

// patchImages changes obj's spec as the API server does for an update of a
// pod controller (imageKinds) that changes nothing but the images of
// containers it has (same names, same order): spec, Helm 3's strategic merge
// patch of spec applied with the versioned kind's patch strategy, or, merged,
// the JSON merge patch from the live object to Helm 4's merged one. It
// returns why the server must be asked, "" when obj now holds what the
// server would store: the images, and metadata.generation one higher
// (PrepareForUpdate: the spec changed).
//
// The server's answer is more than the object: the generation bump makes
// the strategy's WarningsOnUpdate return the pod template warnings
// (pkg/api/pod/warnings.go, about the whole template), so the template
// must hold nothing they warn about (podTemplateWarns); PodSecurity is the
// caller's (Observers.Warns). Validation asks a template's image only to be
// set (validateContainerCommon); an image with surrounding spaces, which a
// pod refuses, is asked too. No default depends on the image
// (imagePullPolicy is defaulted only when unset, and live has it).
func patchImages(obj map[string]interface{}, spec interface{}, how specChange, newObject func() runtime.Object) string {
	change, ok := spec.(map[string]interface{})
	if !ok {
		return "spec is not a map"
	}
	liveSpec, ok := obj["spec"].(map[string]interface{})
	if !ok {
		return "live spec is not a map"
	}
	var next map[string]interface{}
	switch how {
	case specPatched:
		patched, err := strategicpatch.StrategicMergeMapPatch(
			map[string]interface{}{"spec": runtime.DeepCopyJSONValue(liveSpec)},
			map[string]interface{}{"spec": runtime.DeepCopyJSONValue(change)}, newObject())
		if err != nil {
			return "the patch does not apply"
		}
		next, _ = patched["spec"].(map[string]interface{})
	case specMerged:
		// Copies of both: the result shares nothing with merged.
		next, _ = applyMergePatch(runtime.DeepCopyJSONValue(liveSpec), runtime.DeepCopyJSONValue(change)).(map[string]interface{})
	}
	if next == nil {
		return "no spec after the patch"
	}
	changed, why := onlyImages(liveSpec, next)
	if why != "" {
		return why
	}
	if !changed {
		return "" // what the server stores is live's spec: no bump
	}
	tpl, _, _ := unstructured.NestedMap(next, "template")
	if why := podTemplateWarns(tpl); why != "" {
		return why
	}
	meta, ok := obj["metadata"].(map[string]interface{})
	if !ok {
		return "live metadata is not a map"
	}
	obj["spec"] = next
	gen, _ := meta["generation"].(int64)
	meta["generation"] = gen + 1
	return ""
}

// onlyImages reports whether next differs from live, two pod controller
// specs, only in the images of containers both have, and whether they
// differ at all; otherwise it says why the server must be asked.
func onlyImages(live, next map[string]interface{}) (bool, string) {
	a, b := imageless(live), imageless(next)
	if a.why != "" || b.why != "" {
		return false, a.why + b.why
	}
	if !jsonvalue.DecodedEqual(a.spec, b.spec) {
		return false, "patch sets spec beyond container images"
	}
	changed := false
	for i, img := range b.images {
		if strings.TrimSpace(img) == "" || strings.TrimSpace(img) != img {
			return false, "an image the server or its pods refuse"
		}
		changed = changed || img != a.images[i]
	}
	return changed, ""
}

// imagelessSpec is a pod controller's spec with its containers' images
// taken out (images, in the order of containerLists then of each list).
type imagelessSpec struct {
	spec   map[string]interface{}
	images []string
	why    string
}

func imageless(spec map[string]interface{}) imagelessSpec {
	out := imagelessSpec{spec: maps.Clone(spec)}
	tpl, ok := out.spec["template"].(map[string]interface{})
	if !ok {
		return imagelessSpec{why: "no pod template"}
	}
	tpl = maps.Clone(tpl)
	out.spec["template"] = tpl
	pod, ok := tpl["spec"].(map[string]interface{})
	if !ok {
		return imagelessSpec{why: "no pod spec"}
	}
	pod = maps.Clone(pod)
	tpl["spec"] = pod
	for _, list := range containerLists {
		v, ok := pod[list]
		if !ok {
			continue
		}
		items, ok := v.([]interface{})
		if !ok {
			return imagelessSpec{why: list + " is not a list"}
		}
		copied := make([]interface{}, len(items))
		for i, item := range items {
			c, ok := item.(map[string]interface{})
			if !ok {
				return imagelessSpec{why: list + " holds a container not a map"}
			}
			img, ok := c["image"].(string)
			if !ok {
				return imagelessSpec{why: fmt.Sprintf("%s[%d].image is not a string", list, i)}
			}
			c = maps.Clone(c)
			delete(c, "image")
			copied[i] = c
			out.images = append(out.images, img)
		}
		pod[list] = copied
	}
	return out
}

// applyMergePatch applies the JSON merge patch (RFC 7386) patch to target,
// which it may change.
func applyMergePatch(target, patch interface{}) interface{} {
	p, ok := patch.(map[string]interface{})
	if !ok {
		return patch
	}
	t, ok := target.(map[string]interface{})
	if !ok {
		t = map[string]interface{}{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = applyMergePatch(t[k], v)
	}
	return t
}

// deprecatedNodeLabels are the node labels GetWarningsForPodTemplate warns
// about in a node selector (pkg/api/node/util.go, 1.37).
var deprecatedNodeLabels = map[string]bool{
	"beta.kubernetes.io/arch": true, "beta.kubernetes.io/os": true,
	"failure-domain.beta.kubernetes.io/region": true, "failure-domain.beta.kubernetes.io/zone": true,
	"beta.kubernetes.io/instance-type": true, "app.kubernetes.io/created-by": true,
	"scheduler.alpha.kubernetes.io/preferAvoidPods": true, "node-role.kubernetes.io/master": true,
}

// warnedAnnotations are the pod template annotations (keys, or prefixes
// ending in "/") GetWarningsForPodTemplate may warn about: deprecated ones,
// and the seccomp and AppArmor annotations (warned about unless a field
// says the same).
var warnedAnnotations = []string{
	"scheduler.alpha.kubernetes.io/critical-pod", "security.alpha.kubernetes.io/sysctls",
	"security.alpha.kubernetes.io/unsafe-sysctls", "seccomp.security.alpha.kubernetes.io/pod",
	"container.seccomp.security.alpha.kubernetes.io/", "container.apparmor.security.beta.kubernetes.io/",
}

// podTemplateWarns says why the pod template warnings the API server
// returns for an update that bumps a pod controller's generation
// (GetWarningsForPodTemplate in pkg/api/pod/warnings.go, 1.37) may not be
// empty for tpl, "" when they are certainly empty. Each of its checks is
// either reproduced (deprecated node-selector labels and annotations,
// fractional byte quantities, duplicate or empty pull-secret names,
// duplicate env names, container ports, a negative grace period) or
// answered "ask" whenever the field it reads is set (affinity, topology
// spread, the warned volume kinds and item paths, host aliases, DNS name
// servers, overhead).
func podTemplateWarns(tpl map[string]interface{}) string {
	var t corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tpl, &t); err != nil {
		return "pod template unreadable"
	}
	for k := range t.Annotations {
		for _, w := range warnedAnnotations {
			if k == w || strings.HasSuffix(w, "/") && strings.HasPrefix(k, w) {
				return "pod template annotation " + k + " may be warned about"
			}
		}
	}
	s := t.Spec
	for k := range s.NodeSelector {
		if deprecatedNodeLabels[k] {
			return "deprecated node label " + k
		}
	}
	switch {
	case s.Affinity != nil && (s.Affinity.NodeAffinity != nil || s.Affinity.PodAffinity != nil || s.Affinity.PodAntiAffinity != nil):
		return "pod affinity may be warned about"
	case len(s.TopologySpreadConstraints) > 0:
		return "topology spread may be warned about"
	case len(s.HostAliases) > 0:
		return "host aliases may be warned about"
	case s.DNSConfig != nil && len(s.DNSConfig.Nameservers) > 0:
		return "DNS name servers may be warned about"
	case len(s.Overhead) > 0:
		return "pod overhead may be warned about"
	case s.TerminationGracePeriodSeconds != nil && *s.TerminationGracePeriodSeconds < 0:
		return "a negative termination grace period"
	}
	for _, v := range s.Volumes {
		if volumeWarns(v) {
			return "volume " + v.Name + " may be warned about"
		}
	}
	pullSecrets := map[string]bool{}
	for _, ps := range s.ImagePullSecrets {
		if ps.Name == "" || pullSecrets[ps.Name] {
			return "an empty or duplicate image pull secret"
		}
		pullSecrets[ps.Name] = true
	}
	ports, portNames := map[string]bool{}, map[string]bool{}
	var containers []corev1.Container
	containers = append(containers, s.InitContainers...)
	containers = append(containers, s.Containers...)
	for _, e := range s.EphemeralContainers {
		containers = append(containers, corev1.Container(e.EphemeralContainerCommon))
	}
	for _, c := range containers {
		for _, rl := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
			for _, name := range []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
				if q, ok := rl[name]; ok && fractionalBytes(q) {
					return "a fractional byte quantity"
				}
			}
		}
		env := map[string]bool{}
		for _, e := range c.Env {
			if env[e.Name] {
				return "a duplicate env name" // warned about unless it refers to the one before
			}
			env[e.Name] = true
		}
		for _, p := range c.Ports {
			key := fmt.Sprintf("%d/%s", p.ContainerPort, p.Protocol)
			if p.HostIP != "" || ports[key] || p.Name != "" && portNames[p.Name] {
				return "container ports may be warned about"
			}
			ports[key] = true
			if p.Name != "" {
				portNames[p.Name] = true
			}
		}
	}
	return ""
}

// fractionalBytes is the pod template warnings' test of a memory or
// ephemeral-storage quantity.
func fractionalBytes(q resource.Quantity) bool {
	return q.MilliValue()%1000 != 0
}

// volumeWarns reports whether GetWarningsForPodTemplate may warn about v:
// a deprecated or removed volume plugin, an ephemeral volume (its claim
// spec is warned about), item paths that may overlap, a projected volume.
func volumeWarns(v corev1.Volume) bool {
	s := v.VolumeSource
	switch {
	case s.PhotonPersistentDisk != nil, s.GitRepo != nil, s.ScaleIO != nil, s.Flocker != nil, s.StorageOS != nil,
		s.Quobyte != nil, s.Glusterfs != nil, s.Ephemeral != nil, s.CephFS != nil, s.RBD != nil, s.Projected != nil:
		return true
	case s.ConfigMap != nil && len(s.ConfigMap.Items) > 1, s.Secret != nil && len(s.Secret.Items) > 1,
		s.DownwardAPI != nil && len(s.DownwardAPI.Items) > 1:
		return true
	}
	return false
}
