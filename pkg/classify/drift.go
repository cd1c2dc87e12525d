package classify

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/jsonvalue"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
)

// Drift lists the fields the last release set whose live value differs
// (someone or something edited the object: an HPA, kubectl edit) and whether
// the upgrade puts the chart's value back. Fields the release never set are
// not drift: they are defaults or owned by others.
func Drift(original, live, target, predicted *unstructured.Unstructured) []plan.Drift {
	if original == nil || live == nil || within(original, live) {
		return nil
	}
	return drift(original, live, target, predicted)
}

// drift is Drift without the shortcut of within.
func drift(original, live, target, predicted *unstructured.Unstructured) []plan.Drift {
	// Decoded as the server decodes them (1024Mi is 1Gi), but not defaulted:
	// a field the release left to its default is not the release's.
	decodedLive := predict.Decoded(live)
	orig, cur := Normalize(predict.Decoded(original)).Object, Normalize(decodedLive).Object
	var want, got map[string]interface{}
	var out []plan.Drift
	for _, p := range ChangedPaths(orig, cur) {
		if !setBy(original, orig, p) || writeOnly(original, p) {
			continue
		}
		d := plan.Drift{Path: p}
		if want == nil && predicted != nil && target != nil {
			// Decoded once, and only when there is drift (most objects have
			// none).
			want, got = predict.Decoded(target).Object, decodedLive.Object
			if predicted != live { // a noop predicts live itself
				got = predict.Decoded(predicted).Object
			}
		}
		if want != nil {
			w, g := Lookup(want, p), Lookup(got, p)
			d.Reverted = w != nil && jsonvalue.LeafEqual(w, g) && !jsonvalue.LeafEqual(g, Lookup(cur, p))
		}
		out = append(out, d)
	}
	return out
}

// within reports whether every field the release's manifest original set
// holds the same value in live (lists of the same length, element by
// element; a Secret's stringData as the data it folds into), so that Drift
// has nothing to find: drift is a field original set, at or under which
// live differs, and decoding turns equal values into equal values. It
// spares the two decodes for most objects. False is no answer: Drift then
// decodes and compares.
func within(original, live *unstructured.Unstructured) bool {
	o, l := original.Object, live.Object
	if isSecret(original) {
		var payload, livePayload map[string]interface{}
		o, payload = predict.SecretPayload(o)
		l, livePayload = predict.SecretPayload(l)
		if !jsonvalue.Subset(payload, livePayload) {
			return false
		}
	}
	return jsonvalue.Subset(o, l)
}

func isSecret(obj *unstructured.Unstructured) bool {
	return obj.GetKind() == "Secret" && obj.GroupVersionKind().Group == ""
}

// setBy reports whether the release's manifest raw set the field at path
// (decoded is its decoded form). Decoding adds zero values for fields JSON
// never omits (a Service port's targetPort is an int-or-string struct): such
// a field was left to the server's default, whose value is not drift. A
// Secret's stringData is folded into data by decoding, so data is judged on
// the decoded form.
func setBy(raw *unstructured.Unstructured, decoded map[string]interface{}, path string) bool {
	if Lookup(decoded, path) == nil {
		return false
	}
	if raw.GetKind() == "Secret" && raw.GroupVersionKind().Group == "" && Under(path, "data") {
		return true
	}
	return Lookup(raw.Object, path) != nil
}

// writeOnly reports fields the server never returns: a Secret's stringData
// is folded into data on write.
func writeOnly(obj *unstructured.Unstructured, path string) bool {
	return obj.GetKind() == "Secret" && obj.GroupVersionKind().Group == "" && Under(path, "stringData")
}
