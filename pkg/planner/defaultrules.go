package planner

import (
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// caInjectors are the annotations that ask a controller to write a CA
// bundle into the object (cert-manager's cainjector, OpenShift's service CA
// operator): whatever the chart sets there, the controller writes its own
// again right after the upgrade.
var caInjectors = []string{
	"cert-manager.io/inject-ca-from",
	"cert-manager.io/inject-ca-from-secret",
	"cert-manager.io/inject-apiserver-ca",
	"service.beta.openshift.io/inject-cabundle",
}

// defaultRules are the ignore rules every plan has: the CA bundles a
// controller injects (see caInjectors), ignored only on objects that ask
// for the injection.
func defaultRules() []IgnoreRule {
	in := "default (CA bundle injected by a controller)"
	var out []IgnoreRule
	for _, r := range []struct{ kind, path string }{
		{"MutatingWebhookConfiguration", "webhooks[*].clientConfig.caBundle"},
		{"ValidatingWebhookConfiguration", "webhooks[*].clientConfig.caBundle"},
		{"APIService", "spec.caBundle"},
		{"CustomResourceDefinition", "spec.conversion.webhook.clientConfig.caBundle"},
	} {
		out = append(out, IgnoreRule{Rule: r.kind + ":" + r.path, Kind: r.kind, Path: r.path, In: in, Injected: true})
	}
	return out
}

// caInjected reports whether the object of c asks for a CA bundle to be
// injected, live or in the new render.
func caInjected(c *plan.Change) bool {
	for _, obj := range []interface{ GetAnnotations() map[string]string }{c.Before, c.After} {
		if obj == nil {
			continue
		}
		for _, a := range caInjectors {
			if _, ok := obj.GetAnnotations()[a]; ok {
				return true
			}
		}
	}
	return false
}
