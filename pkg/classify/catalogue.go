package classify

import (
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// rule marks a field path as immutable for a kind: changing it requires
// deleting and recreating the object. It is the fallback knowledge used when
// the API server cannot be asked (offline, RBAC forbids patch) and the map
// used to turn a coarse server cause ("spec: Forbidden") into field paths.
type rule struct {
	path string
	// except lists sub-paths that stay mutable; "[*]" matches any index.
	except []string
	// applies, when set, restricts the rule to live/predicted states where it
	// holds (ConfigMaps marked immutable, a PVC shrinking, ...).
	applies func(path string, live, predicted map[string]interface{}) bool
	message string
}

// catalogue is the per-kind immutability table of GUIDE §4 (Kubernetes
// 1.34–1.37; the field sets did not change across those versions, only the
// server's messages did). Read-only after construction.
type catalogue map[schema.GroupKind][]rule

const immutableMsg = "field is immutable"

func gk(group, kind string) schema.GroupKind { return schema.GroupKind{Group: group, Kind: kind} }

// pvSources are the inline volume-source fields of a PersistentVolume spec;
// together they form persistentVolumeSource, which is immutable.
var pvSources = []string{"awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "csi", "fc",
	"flexVolume", "flocker", "gcePersistentDisk", "glusterfs", "hostPath", "iscsi", "local", "nfs",
	"photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos", "vsphereVolume"}

func newCatalogue() catalogue {
	c := catalogue{
		gk("apps", "Deployment"): {{path: "spec.selector", message: immutableMsg}},
		gk("apps", "ReplicaSet"): {{path: "spec.selector", message: immutableMsg}},
		gk("apps", "DaemonSet"):  {{path: "spec.selector", message: immutableMsg}},
		gk("apps", "StatefulSet"): {{
			path: "spec",
			except: []string{"spec.replicas", "spec.ordinals", "spec.template", "spec.updateStrategy",
				"spec.revisionHistoryLimit", "spec.persistentVolumeClaimRetentionPolicy", "spec.minReadySeconds"},
			message: "updates to statefulset spec for fields other than replicas, ordinals, template, updateStrategy, revisionHistoryLimit, persistentVolumeClaimRetentionPolicy and minReadySeconds are forbidden",
		}},
		gk("batch", "Job"): {
			{path: "spec.selector", message: immutableMsg},
			{path: "spec.template", message: immutableMsg},
			{path: "spec.completionMode", message: immutableMsg},
			{path: "spec.podFailurePolicy", message: immutableMsg},
			{path: "spec.backoffLimitPerIndex", message: immutableMsg},
			{path: "spec.successPolicy", message: immutableMsg},
			{path: "spec.managedBy", message: immutableMsg},
			{path: "spec.completions", message: immutableMsg, applies: func(_ string, _, p map[string]interface{}) bool {
				return Lookup(p, "spec.completionMode") != "Indexed"
			}},
		},
		gk("", "Service"): {
			{path: "spec.clusterIP", message: "may not change once set", applies: clusterIPChange},
			{path: "spec.clusterIPs[0]", message: "may not change once set", applies: bothSet},
			{path: "spec.ipFamilies[0]", message: "may not change once set", applies: bothSet},
			{path: "spec.loadBalancerClass", message: "may not change once set", applies: bothSet},
			{path: "spec.healthCheckNodePort", message: immutableMsg, applies: bothSet},
		},
		gk("", "PersistentVolumeClaim"): {
			{path: "spec", except: []string{"spec.resources.requests", "spec.volumeAttributesClassName"},
				message: "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"},
			{path: "spec.resources.requests.storage", applies: shrinks,
				message: "storage request cannot shrink: a smaller claim means a new, empty volume"},
		},
		gk("", "ConfigMap"): immutableData("data", "binaryData"),
		gk("", "Secret"): append(immutableData("data", "stringData"),
			rule{path: "type", message: immutableMsg}),
		gk("storage.k8s.io", "StorageClass"): {
			{path: "parameters", message: "updates to parameters are forbidden"},
			{path: "provisioner", message: "updates to provisioner are forbidden"},
			{path: "reclaimPolicy", message: "updates to reclaimPolicy are forbidden"},
			{path: "volumeBindingMode", message: "updates to volumeBindingMode are forbidden"},
		},
		gk("rbac.authorization.k8s.io", "RoleBinding"):        {{path: "roleRef", message: "cannot change roleRef"}},
		gk("rbac.authorization.k8s.io", "ClusterRoleBinding"): {{path: "roleRef", message: "cannot change roleRef"}},
		gk("networking.k8s.io", "IngressClass"):               {{path: "spec.controller", message: immutableMsg}},
		gk("scheduling.k8s.io", "PriorityClass"): {
			{path: "value", message: "may not be changed in an update"},
			{path: "preemptionPolicy", message: "may not be changed in an update"},
		},
		gk("discovery.k8s.io", "EndpointSlice"): {{path: "addressType", message: immutableMsg}},
		gk("", "ResourceQuota"):                 {{path: "spec.scopes", message: immutableMsg}},
		gk("apiextensions.k8s.io", "CustomResourceDefinition"): {
			{path: "spec.group", message: immutableMsg},
			{path: "spec.names.plural", message: immutableMsg},
			{path: "spec.scope", message: immutableMsg},
			{path: "spec.names.kind", message: immutableMsg},
		},
		gk("", "Pod"): {{path: "spec",
			except: []string{"spec.containers[*].image", "spec.initContainers[*].image", "spec.activeDeadlineSeconds",
				"spec.tolerations", "spec.terminationGracePeriodSeconds", "spec.schedulingGates"},
			message: "pod updates may not change fields other than image, activeDeadlineSeconds, tolerations and terminationGracePeriodSeconds"}},
	}
	pv := []rule{{path: "spec.volumeMode", message: immutableMsg}, {path: "spec.nodeAffinity", message: immutableMsg, applies: bothSet}}
	for _, src := range pvSources {
		pv = append(pv, rule{path: "spec." + src, message: "spec.persistentvolumesource is immutable after creation"})
	}
	c[gk("", "PersistentVolume")] = pv
	return c
}

// immutableData protects a ConfigMap's or Secret's payload once the live
// object is marked immutable.
func immutableData(fields ...string) []rule {
	live := func(_ string, l, _ map[string]interface{}) bool { return Lookup(l, "immutable") == true }
	rules := []rule{{path: "immutable", message: "field is immutable when `immutable` is set", applies: live}}
	for _, f := range fields {
		rules = append(rules, rule{path: f, message: "field is immutable when `immutable` is set", applies: live})
	}
	return rules
}

// bothSet: the field changes from one set value to another (setting it
// first, or dropping it to let the server keep its value, is allowed).
func bothSet(path string, live, predicted map[string]interface{}) bool {
	l, p := Lookup(live, path), Lookup(predicted, path)
	return l != nil && l != "" && p != nil && p != ""
}

// clusterIPChange: a Service's cluster IP is set to a value other than the
// live one. Unset keeps the live IP; a live Service without one (offline:
// the base did not set it) has an allocated IP, which neither "None"
// (headless) nor a chosen IP will be. ExternalName Services have none.
func clusterIPChange(path string, live, predicted map[string]interface{}) bool {
	if Lookup(live, "spec.type") == "ExternalName" || Lookup(predicted, "spec.type") == "ExternalName" {
		return false
	}
	p, _ := Lookup(predicted, path).(string)
	if p == "" {
		return false
	}
	l, _ := Lookup(live, path).(string)
	return l != p
}

// shrinks: a quantity gets smaller.
func shrinks(path string, live, predicted map[string]interface{}) bool {
	ls, lok := Lookup(live, path).(string)
	ps, pok := Lookup(predicted, path).(string)
	if !lok || !pok {
		return false
	}
	lq, err1 := resource.ParseQuantity(ls)
	pq, err2 := resource.ParseQuantity(ps)
	return err1 == nil && err2 == nil && pq.Cmp(lq) < 0
}

// immutableAt returns the rule that makes a change at path immutable for
// the kind, or nil.
func (c catalogue) immutableAt(kind schema.GroupKind, path string, live, predicted map[string]interface{}) *rule {
	var found *rule
	for i := range c[kind] {
		r := &c[kind][i]
		if !Under(path, r.path) || excepted(path, r.except) {
			continue
		}
		if r.applies != nil && !r.applies(r.path, live, predicted) {
			continue
		}
		// The most specific rule explains best (PVC shrink over "spec").
		if found == nil || len(r.path) > len(found.path) {
			found = r
		}
	}
	return found
}

func excepted(path string, except []string) bool {
	for _, e := range except {
		if strings.Contains(e, "[*]") {
			re := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(e), `\[\*\]`, `\[\d+\]`) + `($|[.\[])`)
			if re.MatchString(path) {
				return true
			}
			continue
		}
		if Under(path, e) {
			return true
		}
	}
	return false
}

// podTemplateKinds are the workloads whose pod template changes replace
// running pods.
var podTemplateKinds = map[schema.GroupKind]bool{
	gk("apps", "Deployment"):  true,
	gk("apps", "StatefulSet"): true,
	gk("apps", "DaemonSet"):   true,
}
