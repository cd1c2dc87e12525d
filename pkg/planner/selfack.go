package planner

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// markSelfAcknowledged makes a change whose render sets the guard's
// acknowledgement invalid: no ignore rule, ack or flag lets a chart
// acknowledge its own deletion.
func markSelfAcknowledged(c *plan.Change, rendered *unstructured.Unstructured) {
	reasons := classify.SelfAcknowledged(rendered)
	if len(reasons) == 0 {
		return
	}
	c.Class, c.Destructive, c.Blocking = plan.ClassInvalid, true, true
	c.Reasons = append(reasons, c.Reasons...)
	c.Rollout = nil
}
