package planner

import (
	"context"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/clusterfake"
)

func webhook(annotations, caBundle string) string {
	return `# Source: app/templates/webhook.yaml
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: app
  annotations: {` + annotations + `}
webhooks:
- name: check.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig:
    service: {name: app, namespace: prod}
    caBundle: "` + caBundle + `"
`
}

// injected serves each object as the last release applied it, its CA bundle
// since written by a controller.
func injected() Cluster {
	c := Offline{Release: "app", Namespace: "prod"}.Parts()
	applied := c.Objects
	c.Objects = clusterfake.Objects(func(ctx context.Context, obj, prev *manifest.Object) live.State {
		s := applied.Get(ctx, obj, prev)
		if s.Obj != nil {
			s.Obj = s.Obj.DeepCopy()
			hooks := s.Obj.Object["webhooks"].([]interface{})
			hooks[0].(map[string]interface{})["clientConfig"].(map[string]interface{})["caBundle"] = "SU5KRUNURUQ="
		}
		return s
	})
	return c
}

// TestInjectedCABundleIgnored: a chart that sets a webhook's caBundle which
// cert-manager injects shows the change, ignored by a default rule; without
// the injection annotation it counts.
func TestInjectedCABundleIgnored(t *testing.T) {
	for _, annotations := range []string{"cert-manager.io/inject-ca-from: prod/app", ""} {
		m := webhook(annotations, "Cg==")
		p, err := New(injected(), "").Plan(context.Background(), Input{
			Release: plan.Release{Name: "app", Namespace: "prod"}, PreviousManifest: m, NextManifest: m})
		if err != nil {
			t.Fatal(err)
		}
		c := p.Changes[0]
		injected := annotations != ""
		if c.Action != plan.ActionUpdate || c.Ignored != injected || p.HasChanges() == injected {
			t.Fatalf("annotations {%s}: %s ignored=%v %+v", annotations, c.Action, c.Ignored, c.Reasons)
		}
		if injected && (c.Reasons[0].IgnoredBy != "ValidatingWebhookConfiguration:webhooks[*].clientConfig.caBundle" ||
			!strings.HasPrefix(c.Reasons[0].IgnoredIn, "default")) {
			t.Errorf("reason %+v", c.Reasons[0])
		}
	}
}
