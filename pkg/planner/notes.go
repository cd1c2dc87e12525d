package planner

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apis"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// apiObjects is what the API check (Input.APIs) reads of both releases'
// objects, taken before the objects pass drops the sets; empty when it is
// off.
type apiObjects struct {
	prev, next []apis.Object
}

func apiObjectsOf(in Input, prev, next *manifest.Set) apiObjects {
	if in.APIs == nil {
		return apiObjects{}
	}
	return apiObjects{prev: apis.Objects(prev), next: apis.Objects(next)}
}

// fingerprint seals each destructive change, once every pass that marks
// it has run, for the acknowledgement that names it.
func fingerprint(changes []plan.Change) {
	for i := range changes {
		if changes[i].Destructive {
			changes[i].Fingerprint = plan.Fingerprint(changes[i])
		}
	}
}

// notes is the plan's last pass: the API versions judged against the
// target cluster, and the notes on what the plan did not see.
func (p *Planner) notes(out *plan.Plan, in Input, objs apiObjects, crdKinds map[schema.GroupKind]bool) {
	if in.APIs != nil {
		apis.MarkObjects(out, objs.prev, objs.next, crdKinds, in.APIs)
	}
	if in.HooksDisabled && len(out.Hooks) > 0 {
		out.Notes = append(out.Notes, "--no-hooks: Helm runs none of the chart's hooks in this operation")
	}
	if out.Offline {
		out.Notes = append(out.Notes, "offline: the base and head renders were compared without cluster access; every verdict comes from the catalogue, and live state and drift were not checked")
	}
}
