package restart

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// Manager is the field manager of a restart's patch: its own, not
// Helm's ("helm"), so Helm 4's next server-side apply, which does not
// hold the annotation, leaves it where it is instead of removing a field
// it owns; Helm 3's three-way patch leaves it too, as neither manifest
// sets it. The next plan sees neither a change nor drift (drift is of
// fields the release set).
const Manager = "helm-safe-upgrade-restart"

// Result is what became of each restart asked for.
type Result struct {
	// Restarted and Failed name the workloads ("Deployment/a"); Errors
	// holds why each of Failed failed, in the same order.
	Restarted, Failed []string
	Errors            []error
}

// Apply restarts, once Helm's upgrade succeeded, each workload of
// restarts (a plan's Restarts) as `kubectl rollout restart` does: a merge
// patch of its pod template's restartedAt annotation to now, under
// Manager; its controller replaces the pods. It tries every workload
// whatever failed before, so the result says which were restarted and
// which not.
func Apply(ctx context.Context, cluster *live.Cluster, restarts []*plan.Change, now time.Time) Result {
	var res Result
	patch, _ := json.Marshal(map[string]interface{}{"spec": map[string]interface{}{"template": map[string]interface{}{
		"metadata": map[string]interface{}{"annotations": map[string]string{plan.RestartedAtAnnotation: now.UTC().Format(time.RFC3339)}}}}})
	for _, c := range restarts {
		name := c.ID.Kind + "/" + c.ID.Name
		err := patchOne(ctx, cluster, c, patch)
		if err != nil {
			res.Failed, res.Errors = append(res.Failed, name), append(res.Errors, err)
			continue
		}
		res.Restarted = append(res.Restarted, name)
	}
	return res
}

func patchOne(ctx context.Context, cluster *live.Cluster, c *plan.Change, patch []byte) error {
	gv, err := schema.ParseGroupVersion(c.APIVersion)
	if err != nil {
		return fmt.Errorf("%s: %w", c.ID, err)
	}
	ri, _, err := cluster.Resource(gv.WithKind(c.ID.Kind), c.ID.Namespace)
	if err != nil {
		return fmt.Errorf("%s: %w", c.ID, err)
	}
	if _, err := ri.Patch(ctx, c.ID.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: Manager}); err != nil {
		return fmt.Errorf("patching %s: %w", c.ID, err)
	}
	return nil
}

// Failure says, of a result some of whose restarts failed after release's
// revision was applied, which workloads were restarted and which not, and
// why; "" when none failed.
func (res Result) Failure(release string, revision int) string {
	if len(res.Failed) == 0 {
		return ""
	}
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
