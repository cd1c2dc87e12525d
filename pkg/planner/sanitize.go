package planner

import (
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// addSecrets collects the Secret values of the objects of sets.
func addSecrets(san *redact.Sanitizer, sets ...*manifest.Set) {
	for _, s := range sets {
		for _, o := range s.Objects() {
			if o.Loaded() { // the others hold no secret value (manifest.Object.Load)
				san.Add(o.Obj)
			}
		}
	}
}

// sanitizeChanges removes Secret values from every text of changes: the
// reasons and notes carry the API server's messages (dry-run errors,
// admission and webhook denials), which can echo request data. It runs once
// every live object has been read, so values only the cluster holds count
// too, and before fingerprints are computed.
func sanitizeChanges(changes []plan.Change, san *redact.Sanitizer) {
	for i := range changes {
		c := &changes[i]
		for j := range c.Reasons {
			r := &c.Reasons[j]
			r.Path, r.Message = san.String(r.Path), san.String(r.Message)
			r.Before, r.After = san.String(r.Before), san.String(r.After)
		}
		for j := range c.Notes {
			c.Notes[j] = san.String(c.Notes[j])
		}
	}
}
