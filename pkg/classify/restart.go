package classify

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

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
// workload of kind, replaces and how (as a rolling verdict says it).
func Rollout(kind schema.GroupKind, obj map[string]interface{}) *plan.Rollout {
	return rollout(kind, obj)
}
