package planner

import (
	"fmt"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// renameKinds are kinds whose rename loses data: a renamed StatefulSet gets
// new, empty claims from its templates; a renamed PVC is a new, empty volume.
var renameKinds = map[string]bool{"StatefulSet": true, "PersistentVolumeClaim": true}

// similarSpec: at most this share of the spec's leaves may differ for a
// delete + create pair to count as a rename.
const similarSpec = 0.3

// markRenames finds delete + create pairs of the same kind and namespace
// whose specs are mostly the same and marks the create destructive too: the
// chart renamed the object, and its data does not follow the new name.
func markRenames(changes []plan.Change) {
	for i := range changes {
		del := &changes[i]
		if del.Action != plan.ActionDelete || !renameKinds[del.ID.Kind] || del.Before == nil {
			continue
		}
		for j := range changes {
			cr := &changes[j]
			if cr.Action != plan.ActionCreate || cr.ID.Kind != del.ID.Kind || cr.ID.Group != del.ID.Group ||
				cr.ID.Namespace != del.ID.Namespace || cr.After == nil {
				continue
			}
			if !similar(del.Before.Object["spec"], cr.After.Object["spec"]) {
				continue
			}
			msg := fmt.Sprintf("looks like a rename of %s to %s: the data of %s does not follow the new name", del.ID.Name, cr.ID.Name, del.ID.Name)
			del.Notes = append(del.Notes, msg)
			cr.Destructive = true
			cr.Reasons = append(cr.Reasons, plan.Reason{Path: "metadata.name", Message: msg, Source: plan.SourceHelm,
				Before: del.ID.Name, After: cr.ID.Name})
		}
	}
}

func similar(a, b interface{}) bool {
	am, aok := a.(map[string]interface{})
	bm, bok := b.(map[string]interface{})
	if !aok || !bok {
		return false
	}
	changed := len(classify.ChangedPaths(am, bm))
	total := len(classify.ChangedPaths(am, map[string]interface{}{}))
	return total > 0 && float64(changed) <= similarSpec*float64(total)
}
