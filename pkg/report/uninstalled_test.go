package report

import (
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// uninstalledPlan is uninstallPlan applied (its claim acknowledged): the
// ConfigMap held by a finalizer, the claim gone, and what stays.
func uninstalledPlan() *plan.Plan {
	p := uninstallPlan()
	p.Changes[0].Acknowledged, p.Changes[0].AckedBy = true, "flag"
	p.Uninstalled = &plan.Uninstalled{
		Deleted:   []manifest.ObjectID{p.Changes[0].ID},
		Remaining: []plan.Remaining{{ID: p.Changes[1].ID, Why: "Terminating since 2026-12-03T09:00:00Z", Finalizers: []string{"example.com/hold"}}},
		Left: []string{"ConfigMap/shop/settings: helm.sh/resource-policy: keep",
			"PersistentVolumeClaim/shop/data-db-0 (1Gi): made from StatefulSet.apps/shop/db's volumeClaimTemplates, which helm uninstall never deletes"},
	}
	return p
}
