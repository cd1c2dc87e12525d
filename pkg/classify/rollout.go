package classify

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/jsonvalue"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// Restartable reports whether a new pod template annotation makes the
// controller of kind replace its pods (what `kubectl rollout restart`
// restarts): a Deployment, StatefulSet or DaemonSet. A ReplicaSet keeps
// its pods whatever its template; a Pod has no template; a Job's pods
// already read the value when they start.
func Restartable(gk schema.GroupKind) bool {
	return gk.Group == "apps" && (gk.Kind == "Deployment" || gk.Kind == "StatefulSet" || gk.Kind == "DaemonSet")
}

// Rollout describes which pods a change of the pod template of obj, a
// workload of kind, replaces and how (as a rolling verdict says it), from
// the predicted workload (server defaults included when the server
// answered).
func Rollout(kind schema.GroupKind, obj map[string]interface{}) *plan.Rollout {
	replicas := int64(1)
	if n, ok := jsonvalue.Number(Lookup(obj, "spec.replicas")); ok {
		replicas = int64(n)
	}
	str := func(path, def string) string {
		if v := Lookup(obj, path); v != nil {
			return fmt.Sprintf("%v", v)
		}
		return def
	}
	r := &plan.Rollout{Replicas: replicas}
	switch kind.Kind {
	case "Deployment":
		r.Strategy = str("spec.strategy.type", "RollingUpdate")
		switch {
		case Lookup(obj, "spec.paused") == true:
			r.Impact = fmt.Sprintf("rollout deferred: the Deployment is paused; its %d pod(s) are replaced when it is resumed", replicas)
		case r.Strategy == "Recreate":
			r.Impact = fmt.Sprintf("all %d pod(s) are stopped before new ones start (Recreate strategy): downtime", replicas)
		default:
			r.Impact = fmt.Sprintf("%d pod(s) replaced gradually (maxUnavailable %s, maxSurge %s)", replicas,
				str("spec.strategy.rollingUpdate.maxUnavailable", "25%"), str("spec.strategy.rollingUpdate.maxSurge", "25%"))
		}
	case "StatefulSet":
		r.Strategy = str("spec.updateStrategy.type", "RollingUpdate")
		if r.Strategy == "OnDelete" {
			r.Impact = fmt.Sprintf("pods keep the old template until each is deleted (OnDelete); %d pod(s) affected", replicas)
			break
		}
		partition := int64(0)
		if n, ok := jsonvalue.Number(Lookup(obj, "spec.updateStrategy.rollingUpdate.partition")); ok {
			partition = int64(n)
		}
		affected := replicas - partition
		if affected < 0 {
			affected = 0
		}
		r.Impact = fmt.Sprintf("%d of %d pod(s) replaced one at a time in reverse ordinal order", affected, replicas)
		if partition > 0 {
			r.Impact += fmt.Sprintf(" (partition %d: lower ordinals keep the old template)", partition)
		}
		if mu := Lookup(obj, "spec.updateStrategy.rollingUpdate.maxUnavailable"); mu != nil {
			r.Impact += fmt.Sprintf(", maxUnavailable %v", mu)
		}
	case "DaemonSet":
		r.Strategy = str("spec.updateStrategy.type", "RollingUpdate")
		r.Replicas = 0 // one pod per eligible node; the count is not in the spec
		if r.Strategy == "OnDelete" {
			r.Impact = "pods keep the old template until each is deleted (OnDelete)"
			break
		}
		r.Impact = fmt.Sprintf("pods replaced node by node (maxUnavailable %s, maxSurge %s)",
			str("spec.updateStrategy.rollingUpdate.maxUnavailable", "1"), str("spec.updateStrategy.rollingUpdate.maxSurge", "0"))
	}
	return r
}
