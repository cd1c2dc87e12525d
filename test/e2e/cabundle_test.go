package e2e

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestInjectedCABundleIsNotAChange: a webhook configuration whose CA bundle
// cert-manager injects (annotation cert-manager.io/inject-ca-from), in a
// chart that sets a placeholder caBundle, planned again after the injection:
// the change is shown, ignored by the default rule, and --detailed-exitcode
// gives 0.
func TestInjectedCABundleIsNotAChange(t *testing.T) {
	c := testcluster.Get(t)
	c.RequireOwnCluster(t) // a cluster-scoped object (that matches no request)
	ns := c.Namespace(t)
	name := ns + "-check"
	vwc := fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: %s
  annotations: {cert-manager.io/inject-ca-from: %s/webhook-cert}
webhooks:
- name: check.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig:
    service: {name: webhook, namespace: %s}
    caBundle: Cg==
`, name, ns, ns)
	chart := writeChart(t, "hooked", "1.0.0", map[string]string{"vwc.yaml": vwc})
	c.Helm(t, "install", "hooked", chart, "-n", ns)
	// The webhook configuration is cluster-scoped: deleting the namespace
	// leaves it, and later plans' admission checks would see it.
	t.Cleanup(func() {
		if out, err := c.HelmErr("uninstall", "hooked", "-n", ns); err != nil {
			t.Errorf("helm uninstall: %v\n%s", err, out)
		}
	})
	// What cainjector does once the certificate is issued.
	patch := `[{"op": "replace", "path": "/webhooks/0/clientConfig/caBundle", "value": "SU5KRUNURUQ="}]`
	if _, err := c.Clientset(t).AdmissionregistrationV1().ValidatingWebhookConfigurations().Patch(t.Context(), name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	r := run(t, c, "hooked", chart, "-n", ns, "--dry-run", "--detailed-exitcode")
	if r.Code != 0 || !strings.Contains(r.Stdout, "(ignored by rule default (CA bundle injected by a controller) ValidatingWebhookConfiguration:webhooks[*].clientConfig.caBundle)") ||
		!strings.Contains(r.Stdout, "1 ignored") {
		t.Errorf("exit %d, want 0 with the caBundle shown and ignored\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
}
