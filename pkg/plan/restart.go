package plan

import (
	"fmt"
	"strings"
)

// RestartedAtAnnotation is the pod template annotation a restart sets, as
// `kubectl rollout restart` does: a new template, so the workload's
// controller replaces its pods as for any rolling update.
const RestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"

// RestartedAtPath is the field a restart changes, as reasons name paths.
const RestartedAtPath = "spec.template.metadata.annotations[" + RestartedAtAnnotation + "]"

// RestartedAtPending is the annotation's value in a planned restart's
// predicted object: the time is the apply's, not known when planning.
const RestartedAtPending = "(time of the apply)"

// Restarts are the changes of the workloads --restart-stale restarts after
// Helm's upgrade, in plan order.
func (p *Plan) Restarts() []*Change {
	var out []*Change
	for i := range p.Changes {
		if len(p.Changes[i].RestartedFor) > 0 {
			out = append(out, &p.Changes[i])
		}
	}
	return out
}

// RestartLine is the summary of Restarts, "" when there is none:
// "2 workloads restarted after the upgrade for changed ConfigMaps/Secrets
// (--restart-stale): Deployment/a, Deployment/b".
func (p *Plan) RestartLine() string {
	rs := p.Restarts()
	if len(rs) == 0 {
		return ""
	}
	names := make([]string, len(rs))
	for i, c := range rs {
		names[i] = c.ID.Kind + "/" + c.ID.Name
	}
	what := "workloads"
	if len(rs) == 1 {
		what = "workload"
	}
	return fmt.Sprintf("%d %s restarted after the upgrade for changed ConfigMaps/Secrets (--restart-stale): %s", len(rs), what, strings.Join(names, ", "))
}
