package classify

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// AckDeleteAnnotation is the guard's acknowledgement of an object's
// deletion (its value the object's own UID). Only a person (kubectl
// annotate) or the tool's acknowledged write sets it: a chart that renders
// it could read the UID through lookup and acknowledge its own deletion.
const AckDeleteAnnotation = "safe-upgrade.io/ack-delete"

// SelfAcknowledged is why a rendered object that sets AckDeleteAnnotation
// is invalid, or nil when it sets none. It cannot be acknowledged: the
// guard refuses Helm's write of it anyway.
func SelfAcknowledged(rendered *unstructured.Unstructured) []plan.Reason {
	if rendered == nil {
		return nil
	}
	if _, ok := rendered.GetAnnotations()[AckDeleteAnnotation]; !ok {
		return nil
	}
	return []plan.Reason{{
		Path:    "metadata.annotations[" + AckDeleteAnnotation + "]",
		Source:  plan.SourceCatalogue,
		Message: "a chart cannot acknowledge its own deletion: " + AckDeleteAnnotation + " is set only by a person (kubectl annotate) or by helm safe-upgrade's acknowledged run, and the safe-upgrade guard refuses Helm's write of it; remove it from the chart",
	}}
}
