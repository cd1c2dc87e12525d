package plan

import (
	"fmt"
	"strings"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

// ReadVia is how a pod reads a ConfigMap or Secret.
type ReadVia string

// The ways a pod reads a ConfigMap or Secret.
const (
	// ViaEnv: env[].valueFrom.configMapKeyRef / secretKeyRef, one key.
	ViaEnv ReadVia = "env"
	// ViaEnvFrom: envFrom, every key (with a prefix).
	ViaEnvFrom ReadVia = "envFrom"
	// ViaVolume: a configMap, secret or projected volume mounted whole.
	ViaVolume ReadVia = "volume"
	// ViaSubPath: one file of such a volume mounted with subPath.
	ViaSubPath ReadVia = "subPath"
	// ViaImagePullSecrets: the pod's imagePullSecrets.
	ViaImagePullSecrets ReadVia = "imagePullSecrets"
)

// Sight is what a consumer's running pods see of a ConfigMap or Secret
// change.
type Sight string

// What running pods see.
const (
	// SightRolls: the workload's pod template changes in the same plan, so
	// its pods are replaced and start with the new value.
	SightRolls Sight = "rolls"
	// SightStale: read once at container start (env, envFrom, subPath) and
	// the template does not change: the running pods keep the old value
	// until they restart.
	SightStale Sight = "stale"
	// SightRestarted: as SightStale, and --restart-stale restarts the
	// workload after Helm's upgrade, so its new pods read the new value.
	SightRestarted Sight = "restarted"
	// SightFile: a volume mounted whole; the kubelet updates the files in
	// place, the application must re-read them.
	SightFile Sight = "file"
	// SightFails: the object is deleted, or a key read without optional is
	// removed: the next pod that starts fails.
	SightFails Sight = "fails"
	// SightNextStart: a Job's or CronJob's template: the pods it starts
	// from now on read the new value.
	SightNextStart Sight = "next-start"
	// SightNextPull: imagePullSecrets are read at the next image pull.
	SightNextPull Sight = "next-pull"
	// SightUnaffected: the consumer reads only keys the change leaves as
	// they are.
	SightUnaffected Sight = "unaffected"
)

// Consumer is one read of a changed ConfigMap or Secret by a workload's pod
// template: in the release's new render, or (Outside) a workload of the
// same namespace that the release does not hold, as read from the cluster.
type Consumer struct {
	Workload manifest.ObjectID
	Outside  bool
	// Container reads it ("" for a pod-level read: imagePullSecrets, a
	// volume no container mounts).
	Container string
	Via       ReadVia
	// Key is the key read (env, subPath, a volume's item); "" for all.
	Key string
	// Env is the variable (env) or the prefix (envFrom).
	Env      string
	Optional bool
	// ServiceAccount, of an imagePullSecrets read, is the ServiceAccount
	// that lists the Secret ("": the pod template does).
	ServiceAccount string
	// Missing: Key is not in the object as the plan leaves it (or the
	// object is deleted).
	Missing bool
	Sees    Sight
	// NotRestarted, of a stale reader --restart-stale leaves as it is,
	// says why ("outside the release").
	NotRestarted string
}

// workload is "Deployment/api".
func (c Consumer) workload() string { return c.Workload.Kind + "/" + c.Workload.Name }

// how says how the consumer reads: "envFrom", "env FOO from key k".
func (c Consumer) how() string {
	var read string
	switch c.Via {
	case ViaEnv:
		read = fmt.Sprintf("env %s from key %s", c.Env, c.Key)
	case ViaEnvFrom:
		read = withDetail("envFrom", "prefix", c.Env)
	case ViaSubPath:
		read = "subPath mount of key " + c.Key
	case ViaVolume:
		read = withDetail("volume", "item", c.Key)
	case ViaImagePullSecrets:
		read = withDetail(string(c.Via), "of ServiceAccount", c.ServiceAccount)
	default:
		read = string(c.Via)
	}
	parts := []string{read}
	if c.Container != "" {
		parts = append(parts, "container "+c.Container)
	}
	if c.Optional {
		parts = append(parts, "optional")
	}
	return strings.Join(parts, ", ")
}

// withDetail is s, followed by what and v when v is set: "envFrom prefix
// APP_", "volume" for an item left out.
func withDetail(s, what, v string) string {
	if v == "" {
		return s
	}
	return s + " " + what + " " + v
}

// Text is one line of what the consumer's running pods see.
func (c Consumer) Text() string {
	who := c.workload()
	var s string
	switch c.Sees {
	case SightRolls:
		s = who + " picks the change up by rolling: its pod template changes in this plan"
	case SightStale:
		s = "running pods of " + who + " keep the old value until they restart"
	case SightRestarted:
		s = who + " is restarted after the upgrade (--restart-stale): its new pods read the new value"
	case SightFile:
		s = who + ": the kubelet updates the file within about a minute; the application must re-read it"
	case SightFails:
		s = "the next pod of " + who + " that starts fails (CreateContainerConfigError)"
		if c.Via == ViaVolume || c.Via == ViaSubPath {
			s = "the next pod of " + who + " that starts fails to mount it (FailedMount)"
		}
		if c.Key != "" {
			s += ": key " + c.Key + " is read without optional"
		} else {
			s += ": it is read without optional"
		}
	case SightNextStart:
		s = "pods " + who + " starts from now on read the new value; running ones keep the old"
	case SightNextPull:
		s = who + " uses it at its next image pull"
	case SightUnaffected:
		s = who + " reads only keys this change leaves as they are"
	default:
		s = who + " reads it"
	}
	s += " (" + c.how() + ")"
	if c.NotRestarted != "" {
		s += "; --restart-stale does not restart it: " + c.NotRestarted
	}
	if c.Missing && c.Sees != SightFails && c.Key != "" {
		s += "; key " + c.Key + " does not exist"
	}
	if c.Outside {
		s = "outside the release: " + s
	}
	return s
}

// StaleConfig counts the changed ConfigMaps and Secrets some running pods
// do not see (SightStale), and the workloads whose pods those are.
func (p *Plan) StaleConfig() (objects, workloads int) {
	seen := map[manifest.ObjectID]bool{}
	for _, c := range p.Changes {
		stale := false
		for _, u := range c.Consumers {
			if u.Sees == SightStale {
				stale = true
				seen[u.Workload] = true
			}
		}
		if stale {
			objects++
		}
	}
	return objects, len(seen)
}

// StaleConfigLine is the summary of StaleConfig, "" when there is none:
// "2 changed ConfigMaps/Secrets: running pods of 3 workloads keep their
// old values until they restart".
func (p *Plan) StaleConfigLine() string {
	n, m := p.StaleConfig()
	if n == 0 {
		return ""
	}
	// Said as what happens ("keep the old value"), which "not seen"
	// left to guess (not found? not read?).
	objects, value, workloads := "ConfigMaps/Secrets", "their old values", "workloads"
	if n == 1 {
		objects, value = "ConfigMap/Secret", "its old value"
	}
	if m == 1 {
		workloads = "workload"
	}
	return fmt.Sprintf("%d changed %s: running pods of %d %s keep %s until they restart", n, objects, m, workloads, value)
}
