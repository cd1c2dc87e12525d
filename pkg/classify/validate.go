package classify

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// selectorKinds are the workloads whose selector must select their pod
// template's labels (apps/v1 validation, on create and on every update).
var selectorKinds = map[schema.GroupKind]bool{
	gk("apps", "Deployment"):  true,
	gk("apps", "StatefulSet"): true,
	gk("apps", "DaemonSet"):   true,
	gk("apps", "ReplicaSet"):  true,
}

// Rejected returns the reasons the API server's validation rejects obj for,
// as far as the catalogue knows without a server: today, a workload whose
// selector is empty or does not select its pod template's labels (the seed
// report's failure). nil when none is known. Used where no dry run can be
// made: offline, and for objects the planner creates without a cluster.
func Rejected(kind schema.GroupKind, obj *unstructured.Unstructured) []plan.Reason {
	if obj == nil || !selectorKinds[kind] {
		return nil
	}
	if r := selectorMismatch(kind, obj.Object); r != nil {
		return []plan.Reason{*r}
	}
	return nil
}

func selectorMismatch(kind schema.GroupKind, obj map[string]interface{}) *plan.Reason {
	raw, _ := Lookup(obj, "spec.selector").(map[string]interface{})
	var sel metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &sel); err != nil {
		return nil // not decodable: the comparison reports the change
	}
	if len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
		return &plan.Reason{Path: "spec.selector", Source: plan.SourceCatalogue,
			Message: "empty selector is invalid for " + strings.ToLower(kind.Kind)}
	}
	selector, err := metav1.LabelSelectorAsSelector(&sel)
	if err != nil {
		return &plan.Reason{Path: "spec.selector", Source: plan.SourceCatalogue, Message: "invalid selector: " + err.Error()}
	}
	tmpl := labels.Set{}
	if m, ok := Lookup(obj, "spec.template.metadata.labels").(map[string]interface{}); ok {
		for k, v := range m {
			tmpl[k] = fmt.Sprint(v)
		}
	}
	if selector.Matches(tmpl) {
		return nil
	}
	return &plan.Reason{Path: "spec.template.metadata.labels", Source: plan.SourceCatalogue,
		Message: "`selector` does not match template `labels`", After: render(Lookup(obj, "spec.template.metadata.labels"))}
}
