package classify

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// ConfigRef is one read of a ConfigMap or Secret by a pod template.
type ConfigRef struct {
	// Kind is ConfigMap or Secret; Name the object read.
	Kind, Name string
	// Container reads it; "" for a pod-level read (imagePullSecrets, a
	// volume no container mounts).
	Container string
	Via       plan.ReadVia
	// Key is the key read (env, subPath, a volume's item); "" for all.
	Key string
	// Env is the variable (env) or the prefix (envFrom).
	Env      string
	Optional bool
	// ServiceAccount, of an imagePullSecrets read, names the
	// ServiceAccount that lists the Secret (its pods get them at creation).
	ServiceAccount string
}

// WorkloadKinds are the kinds whose pod templates ConfigRefs reads, by API
// group.
var WorkloadKinds = map[string]string{
	"Deployment": "apps", "StatefulSet": "apps", "DaemonSet": "apps", "ReplicaSet": "apps",
	"Job": "batch", "CronJob": "batch", "Pod": "",
}

// IsWorkload reports whether group and kind are a workload kind (see
// WorkloadKinds).
func IsWorkload(group, kind string) bool {
	g, ok := WorkloadKinds[kind]
	return ok && g == group
}

// PodSpec returns the pod spec of an object of a workload kind (the
// template's, a CronJob's job template's, a Pod's own); ok false for the
// other kinds.
func PodSpec(group, kind string, obj map[string]interface{}) (map[string]interface{}, bool) {
	if g, ok := WorkloadKinds[kind]; !ok || g != group {
		return nil, false
	}
	var path []string
	switch kind {
	case "Pod":
		path = []string{"spec"}
	case "CronJob":
		path = []string{"spec", "jobTemplate", "spec", "template", "spec"}
	default:
		path = []string{"spec", "template", "spec"}
	}
	v, _, _ := unstructured.NestedFieldNoCopy(obj, path...)
	spec, ok := v.(map[string]interface{})
	return spec, ok
}

// ConfigRefs lists every read of a ConfigMap or Secret by the pod template
// of obj (a workload kind's, see PodSpec): env[].valueFrom, envFrom,
// configMap, secret and projected volumes mounted whole or with subPath,
// imagePullSecrets; of containers and initContainers. Nil for other kinds.
func ConfigRefs(group, kind string, obj map[string]interface{}) []ConfigRef {
	spec, ok := PodSpec(group, kind, obj)
	if !ok {
		return nil
	}
	var refs []ConfigRef
	volumes := podVolumes(spec)
	mounted := map[string]bool{}
	for _, field := range []string{"initContainers", "containers"} {
		for _, c := range objectsOf(spec[field]) {
			name := str(c["name"])
			refs = append(refs, envRefs(name, c)...)
			for _, m := range objectsOf(c["volumeMounts"]) {
				vol := str(m["name"])
				srcs, ok := volumes[vol]
				if !ok {
					continue
				}
				mounted[vol] = true
				sub := str(m["subPath"])
				if sub == "" {
					sub = str(m["subPathExpr"])
				}
				refs = append(refs, mountRefs(name, srcs, sub)...)
			}
		}
	}
	for _, vol := range slices.Sorted(maps.Keys(volumes)) {
		if !mounted[vol] {
			// The kubelet mounts a volume no container uses all the same.
			refs = append(refs, mountRefs("", volumes[vol], "")...)
		}
	}
	for _, s := range objectsOf(spec["imagePullSecrets"]) {
		if n := str(s["name"]); n != "" {
			refs = append(refs, ConfigRef{Kind: "Secret", Name: n, Via: plan.ViaImagePullSecrets})
		}
	}
	return refs
}

// ServiceAccountRef is the ServiceAccount the pods of obj (a workload
// kind's) run as, whose imagePullSecrets the API server adds to each pod
// when it is created: a read of those Secrets, which the planner resolves
// where it knows the ServiceAccount (ServiceAccountPulls). ok false for
// other kinds.
func ServiceAccountRef(group, kind string, obj map[string]interface{}) (ConfigRef, bool) {
	spec, ok := PodSpec(group, kind, obj)
	if !ok {
		return ConfigRef{}, false
	}
	sa := str(spec["serviceAccountName"])
	if sa == "" {
		sa = str(spec["serviceAccount"]) // its deprecated name
	}
	if sa == "" {
		sa = "default"
	}
	return ConfigRef{Kind: "ServiceAccount", Name: sa, Via: plan.ViaImagePullSecrets}, true
}

// ServiceAccountPulls are the Secrets a ServiceAccount obj lists in its
// imagePullSecrets, which the API server adds to each pod it runs when
// the pod is created: reads of the pods of the workloads that use it.
func ServiceAccountPulls(obj map[string]interface{}) []ConfigRef {
	name, _, _ := unstructured.NestedString(obj, "metadata", "name")
	var refs []ConfigRef
	for _, s := range objectsOf(obj["imagePullSecrets"]) {
		if n := str(s["name"]); n != "" {
			refs = append(refs, ConfigRef{Kind: "Secret", Name: n, Via: plan.ViaImagePullSecrets, ServiceAccount: name})
		}
	}
	return refs
}

// envRefs are a container's env[].valueFrom and envFrom reads.
func envRefs(container string, c map[string]interface{}) []ConfigRef {
	var refs []ConfigRef
	for _, e := range objectsOf(c["env"]) {
		from, _ := e["valueFrom"].(map[string]interface{})
		for field, kind := range map[string]string{"configMapKeyRef": "ConfigMap", "secretKeyRef": "Secret"} {
			if r, ok := from[field].(map[string]interface{}); ok {
				refs = append(refs, ConfigRef{Kind: kind, Name: str(r["name"]), Container: container, Via: plan.ViaEnv,
					Key: str(r["key"]), Env: str(e["name"]), Optional: r["optional"] == true})
			}
		}
	}
	for _, e := range objectsOf(c["envFrom"]) {
		for field, kind := range map[string]string{"configMapRef": "ConfigMap", "secretRef": "Secret"} {
			if r, ok := e[field].(map[string]interface{}); ok {
				refs = append(refs, ConfigRef{Kind: kind, Name: str(r["name"]), Container: container, Via: plan.ViaEnvFrom,
					Env: str(e["prefix"]), Optional: r["optional"] == true})
			}
		}
	}
	return refs
}

// volumeSource is one ConfigMap or Secret a volume projects: its items map
// file paths to keys (none: every key, under its own name).
type volumeSource struct {
	kind, name string
	optional   bool
	items      [][2]string // path, key
}

// podVolumes are the configMap, secret and projected volumes of a pod spec
// by name, with the ConfigMaps and Secrets each projects.
func podVolumes(spec map[string]interface{}) map[string][]volumeSource {
	out := map[string][]volumeSource{}
	for _, v := range objectsOf(spec["volumes"]) {
		name := str(v["name"])
		if cm, ok := v["configMap"].(map[string]interface{}); ok {
			out[name] = append(out[name], source("ConfigMap", str(cm["name"]), cm))
		}
		if s, ok := v["secret"].(map[string]interface{}); ok {
			out[name] = append(out[name], source("Secret", str(s["secretName"]), s))
		}
		projected, _ := v["projected"].(map[string]interface{})
		for _, src := range objectsOf(projected["sources"]) {
			if cm, ok := src["configMap"].(map[string]interface{}); ok {
				out[name] = append(out[name], source("ConfigMap", str(cm["name"]), cm))
			}
			if s, ok := src["secret"].(map[string]interface{}); ok {
				out[name] = append(out[name], source("Secret", str(s["name"]), s))
			}
		}
	}
	return out
}

func source(kind, name string, m map[string]interface{}) volumeSource {
	vs := volumeSource{kind: kind, name: name, optional: m["optional"] == true}
	for _, it := range objectsOf(m["items"]) {
		vs.items = append(vs.items, [2]string{str(it["path"]), str(it["key"])})
	}
	return vs
}

// mountRefs are the reads of one mount of a volume's sources: the whole
// volume (one read per item, if it names items), or the file subPath.
func mountRefs(container string, srcs []volumeSource, subPath string) []ConfigRef {
	var refs []ConfigRef
	for _, s := range srcs {
		ref := ConfigRef{Kind: s.kind, Name: s.name, Container: container, Via: plan.ViaVolume, Optional: s.optional}
		if subPath != "" {
			// The file's first path element is a key, or an item's path.
			file, _, _ := strings.Cut(subPath, "/")
			key, found := file, len(s.items) == 0
			for _, it := range s.items {
				if it[0] == subPath || it[0] == file {
					key, found = it[1], true
				}
			}
			if !found {
				continue // another source of the projected volume holds it
			}
			ref.Via, ref.Key = plan.ViaSubPath, key
			refs = append(refs, ref)
			continue
		}
		if len(s.items) == 0 {
			refs = append(refs, ref)
			continue
		}
		for _, it := range s.items {
			r := ref
			r.Key = it[1]
			refs = append(refs, r)
		}
	}
	return refs
}

// objectsOf is v's elements that are objects.
func objectsOf(v interface{}) []map[string]interface{} {
	list, _ := v.([]interface{})
	out := make([]map[string]interface{}, 0, len(list))
	for _, e := range list {
		if m, ok := e.(map[string]interface{}); ok {
			out = append(out, m)
		}
	}
	return out
}

func str(v interface{}) string {
	s, _ := v.(string)
	return s
}
