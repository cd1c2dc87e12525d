package planner

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// noteBudgets adds to each rolling update the PodDisruptionBudgets that
// cover its pods, with the disruptions they allow now. A rollout does not
// consult them: the workload controllers delete pods, they do not evict
// them, so a budget neither slows nor stops a rollout; it only says how
// much unavailability its owner accepts (and blocks node drains meanwhile).
// Budgets are listed once per namespace; a failure to list them becomes a
// note.
func (p *Planner) noteBudgets(ctx context.Context, changes []plan.Change) {
	cache := map[string][]live.Budget{}
	failed := map[string]error{}
	for i := range changes {
		c := &changes[i]
		if c.Rollout == nil || c.After == nil {
			continue
		}
		ns := c.ID.Namespace
		if _, ok := cache[ns]; !ok && failed[ns] == nil {
			budgets, err := p.Cluster.Budgets.Budgets(ctx, ns)
			if errors.Is(err, live.ErrNoServer) {
				return
			}
			cache[ns], failed[ns] = budgets, err
		}
		if err := failed[ns]; err != nil {
			c.Notes = append(c.Notes, "PodDisruptionBudgets not checked: "+err.Error())
			continue
		}
		podLabels, _, _ := unstructured.NestedStringMap(c.After.Object, "spec", "template", "metadata", "labels")
		for _, b := range cache[ns] {
			if b.Selector.Empty() || !b.Selector.Matches(labels.Set(podLabels)) {
				continue
			}
			note := fmt.Sprintf("PodDisruptionBudget %s covers these pods and allows %d disruption(s) now", b.Name, b.DisruptionsAllowed)
			if b.DisruptionsAllowed == 0 {
				note += ": the rollout itself is not blocked by it (workload controllers delete the pods they replace, they do not evict them), but evictions are refused while it allows none, so a node drain during the rollout waits"
			} else {
				note += "; the rollout does not consult it (controllers delete pods, they do not evict them)"
			}
			c.Notes = append(c.Notes, note)
		}
	}
}
