package watch

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// HookFailures says, for each hook Job of p that ran at apply, what its
// failed pods say (the exit code and the last line of the termination
// message, the last lines of the log, an image that cannot be pulled,
// ...): Helm's own error only says that the Job failed. One LIST of pods
// per hook Job, and one GET of a log per failed one; nothing when they are
// gone (a hook-failed delete policy) or cannot be read. The caller
// sanitises it.
func HookFailures(ctx context.Context, cluster *live.Cluster, p *plan.Plan) []string {
	var out []string
	for _, h := range p.Hooks {
		if h.Kind != "Job" || !h.RunsAtApply {
			continue
		}
		ns := h.ID.Namespace
		if ns == "" {
			ns = p.Release.Namespace
		}
		list, err := cluster.Dynamic.Resource(podsGVR).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + h.Name})
		if err != nil {
			continue
		}
		for i := range list.Items {
			pod, err := toPod(&list.Items[i])
			if err != nil {
				continue
			}
			if pr := podProblem(pod); pr != nil {
				why := fmt.Sprintf("hook Job %s: %s", h.Name, pr.text)
				if pr.crashed != nil {
					if lines := lastLogLines(ctx, cluster.REST, pr.crashed); lines != "" {
						why += fmt.Sprintf("; last log lines of container %s: %s", pr.crashed.name, lines)
					}
				}
				out = append(out, why)
				break // one pod says it: the others failed alike
			}
		}
	}
	return out
}
