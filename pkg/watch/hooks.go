package watch

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// HookFailures says, for each hook Job of p that ran at apply, what its
// failed pods say (the exit code and the last line of the termination
// message, the last lines of the log, an image that cannot be pulled,
// ...): Helm's own error only says that the Job failed. One LIST of pods
// per namespace holding hook Jobs (selected by their job-name labels), and
// one GET of a log per failed Job; nothing when they are gone (a
// hook-failed delete policy) or cannot be read. requests says the LISTs
// sent, per resource, as Watcher.Requests does. The caller sanitises it.
func HookFailures(ctx context.Context, r live.Reader, p *plan.Plan) (why []string, requests string) {
	jobs := map[string][]string{} // namespace → hook Job names, in the plan's order
	var namespaces []string
	for _, h := range p.Hooks {
		if h.Kind != "Job" || !h.RunsAtApply {
			continue
		}
		ns := h.ID.Namespace
		if ns == "" {
			ns = p.Release.Namespace
		}
		if jobs[ns] == nil {
			namespaces = append(namespaces, ns)
		}
		jobs[ns] = append(jobs[ns], h.Name)
	}
	var count requestCount
	for _, ns := range namespaces {
		count.add(live.PodsGVR, false)
		list, err := r.List(ctx, live.PodsGVR, ns, metav1.ListOptions{LabelSelector: "job-name in (" + strings.Join(jobs[ns], ",") + ")"})
		if err != nil {
			continue
		}
		sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].GetName() < list.Items[j].GetName() })
		for _, job := range jobs[ns] {
			for i := range list.Items {
				if list.Items[i].GetLabels()["job-name"] != job {
					continue
				}
				pod, err := toPod(&list.Items[i])
				if err != nil {
					continue
				}
				if pr := podProblem(pod); pr != nil {
					line := fmt.Sprintf("hook Job %s: %s", job, pr.text)
					if pr.crashed != nil {
						if lines := lastLogLines(ctx, r, pr.crashed); lines != "" {
							line += fmt.Sprintf("; last log lines of container %s: %s", pr.crashed.name, lines)
						}
					}
					why = append(why, line)
					break // one pod says it: the others failed alike
				}
			}
		}
	}
	return why, count.String()
}
