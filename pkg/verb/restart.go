package verb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apply"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// restartStale restarts, once Helm's upgrade succeeded, the workloads
// planned restarted by --restart-stale (plan.Plan.Restarts: exactly those
// the reviewed plan showed, pinned by a saved plan), and says so on Out.
// Not before: Helm's three-way patch compares the release's manifests and
// the live object, and a failed upgrade restarts nothing. A restart that
// fails is an error naming what was restarted and what was not; revision
// is the one Helm deployed.
func (c *Config) restartStale(ctx context.Context, planned *Planned, revision int) error {
	restarts := planned.Plan.Restarts()
	if len(restarts) == 0 {
		return nil
	}
	c.progress("Restarting %d workload(s) whose pods read a changed ConfigMap or Secret (--restart-stale)", len(restarts))
	res := apply.Restart(ctx, c.Cluster, restarts, c.Now())
	for _, name := range res.Restarted {
		fmt.Fprintf(c.Out, "Restarted %s (--restart-stale)\n", c.Sanitizer.Text(name, redact.MessageLimit))
	}
	if len(res.Failed) == 0 {
		return nil
	}
	return errors.New(c.Sanitizer.Text(restartFailed(planned.Plan.Release.Name, revision, res), redact.MessageLimit))
}

// restartFailed says, of restarts some of which failed after release's
// revision was applied, which workloads were restarted and which not, and
// why.
func restartFailed(release string, revision int, res apply.RestartResult) string {
	why := make([]string, len(res.Errors))
	for i, err := range res.Errors {
		why[i] = err.Error()
	}
	restarted := "none"
	if len(res.Restarted) > 0 {
		restarted = strings.Join(res.Restarted, ", ")
	}
	return fmt.Sprintf("release %q revision %d was applied, but --restart-stale failed: restarted: %s; not restarted: %s (%s); the running pods of those not restarted keep the old value until they restart",
		release, revision, restarted, strings.Join(res.Failed, ", "), strings.Join(why, "; "))
}
