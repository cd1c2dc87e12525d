package classify

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// Drift lists the fields the last release set whose live value differs
// (someone or something edited the object: an HPA, kubectl edit) and whether
// the upgrade puts the chart's value back. Fields the release never set are
// not drift: they are defaults or owned by others.
func Drift(original, live, target, predicted *unstructured.Unstructured) []plan.Drift {
	if original == nil || live == nil {
		return nil
	}
	orig, cur := Normalize(original).Object, Normalize(live).Object
	var out []plan.Drift
	for _, p := range ChangedPaths(orig, cur) {
		if Lookup(orig, p) == nil || writeOnly(original, p) {
			continue
		}
		d := plan.Drift{Path: p}
		if predicted != nil && target != nil {
			want, got := Lookup(target.Object, p), Lookup(predicted.Object, p)
			d.Reverted = want != nil && equalValues(want, got) && !equalValues(got, Lookup(cur, p))
		}
		out = append(out, d)
	}
	return out
}

// writeOnly reports fields the server never returns: a Secret's stringData
// is folded into data on write.
func writeOnly(obj *unstructured.Unstructured, path string) bool {
	return obj.GetKind() == "Secret" && obj.GroupVersionKind().Group == "" && Under(path, "stringData")
}
