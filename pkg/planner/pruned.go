package planner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
)

// PrunedMessage opens the warning on a custom resource whose fields the
// server drops.
const PrunedMessage = "warning: the server drops fields the chart sets"

// markPruned records on c the fields of a custom resource that the render
// (target) sets and the server's dry-run answer (stored) does not hold: the
// installed CRD's schema does not know them, and the API server prunes them
// without an error. Charts ship CRDs in crds/, which Helm never upgrades, so
// custom resources using a newer CRD's fields lose them silently. Built-in
// kinds are left out: their unknown fields are dropped by the typed
// decoding the verdicts already compare in. Metadata is the server's too.
func markPruned(c *plan.Change, target, stored *unstructured.Unstructured) {
	if target == nil || stored == nil || predict.Builtin(target.GroupVersionKind()) {
		return
	}
	for _, p := range classify.ChangedPaths(target.Object, stored.Object) {
		if classify.Under(p, "metadata") || classify.Lookup(target.Object, p) == nil || classify.Lookup(stored.Object, p) != nil {
			continue
		}
		c.Pruned = append(c.Pruned, p)
	}
}

// notePruned adds to each change with pruned fields the warning that names
// them, the CRD version that drops them (with what the installed CRD says
// of its own version, when the chart's crds/ has it) and, when the chart's
// crds/ holds a CRD for the kind (which Helm does not apply), that CRD.
func notePruned(changes []plan.Change, crds *manifest.Set) {
	chartCRDs := map[schema.GroupKind]string{}
	for _, o := range crds.Objects() {
		group, _, _ := unstructured.NestedString(o.Obj.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Obj.Object, "spec", "names", "kind")
		chartCRDs[schema.GroupKind{Group: group, Kind: kind}] = o.ID.Name
	}
	installed := installedCRDs(changes)
	for i := range changes {
		c := &changes[i]
		if len(c.Pruned) == 0 || predict.Builtin(schema.FromAPIVersionAndKind(c.APIVersion, c.ID.Kind)) {
			continue // a built-in kind's: see unknownFields
		}
		gk := schema.GroupKind{Group: c.ID.Group, Kind: c.ID.Kind}
		msg := fmt.Sprintf("%s: %s: the CustomResourceDefinition installed in the cluster%s does not define them in version %s (its schema prunes unknown fields), so the upgrade stores the object without them",
			PrunedMessage, strings.Join(c.Pruned, ", "), installed[gk], c.APIVersion)
		if name, ok := chartCRDs[gk]; ok {
			msg += fmt.Sprintf("; the chart's crds/ CRD %s may define them, but Helm never upgrades crds/: apply it first (the manual change of CustomResourceDefinition/%s)", name, name)
		}
		c.Notes = append(c.Notes, msg)
	}
}

// installedCRDs describes the live CRD of each kind the plan compared
// (the chart's crds/ and templated CRDs): its name, and the labels and
// annotations by which operators stamp a CRD's release (keys ending in
// /version, helm.sh/chart), so a warning can say which one the cluster
// has: " (gadgets.example.com: operator.prometheus.io/version 0.68.0)".
func installedCRDs(changes []plan.Change) map[schema.GroupKind]string {
	out := map[schema.GroupKind]string{}
	for _, c := range changes {
		if c.ID.Group != crdGK.Group || c.ID.Kind != crdGK.Kind || c.Before == nil {
			continue
		}
		group, _, _ := unstructured.NestedString(c.Before.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(c.Before.Object, "spec", "names", "kind")
		var marks []string
		for _, m := range []map[string]string{c.Before.GetLabels(), c.Before.GetAnnotations()} {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				if strings.HasSuffix(k, "/version") || k == "helm.sh/chart" {
					marks = append(marks, k+" "+m[k])
				}
			}
		}
		desc := c.ID.Name
		if len(marks) > 0 {
			desc += ": " + strings.Join(marks, ", ")
		}
		out[schema.GroupKind{Group: group, Kind: kind}] = " (" + desc + ")"
	}
	return out
}
