package report

import (
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// TestConsumersShown checks that every output form shows the readers of a
// changed ConfigMap under its change, and the summary of those whose
// running pods do not see it.
func TestConsumersShown(t *testing.T) {
	p := fixturePlan()
	dep := func(name string) manifest.ObjectID {
		return manifest.ObjectID{Group: "apps", Kind: "Deployment", Namespace: "prod", Name: name}
	}
	p.Changes = append(p.Changes, plan.Change{ID: manifest.ObjectID{Kind: "ConfigMap", Namespace: "prod", Name: "cfg"}, APIVersion: "v1",
		Action: plan.ActionUpdate, Class: plan.ClassInPlace, Consumers: []plan.Consumer{
			{Workload: dep("a"), Container: "app", Via: plan.ViaEnvFrom, Sees: plan.SightStale},
			{Workload: dep("b"), Container: "app", Via: plan.ViaSubPath, Key: "b.txt", Sees: plan.SightStale},
			{Workload: dep("c"), Container: "app", Via: plan.ViaVolume, Sees: plan.SightFile},
			{Workload: dep("d"), Container: "app", Via: plan.ViaEnvFrom, Sees: plan.SightRolls},
			{Workload: dep("e"), Outside: true, Container: "app", Via: plan.ViaEnv, Key: "k", Env: "K", Sees: plan.SightStale},
		}})
	for _, format := range []string{FormatText, FormatJSON, FormatMarkdown} {
		t.Run(format, func(t *testing.T) {
			out := write(t, p, Options{Format: format})
			for _, want := range []string{
				"running pods of Deployment/a keep the old value until they restart (envFrom, container app)",
				"running pods of Deployment/b keep the old value until they restart (subPath mount of key b.txt, container app)",
				"Deployment/c: the kubelet updates the file within about a minute; the application must re-read it",
				"Deployment/d picks the change up by rolling",
				"outside the release: running pods of Deployment/e keep the old value until they restart (env K from key k, container app)",
			} {
				if format == FormatMarkdown {
					want = mdText(want)
				}
				if !strings.Contains(out, want) {
					t.Errorf("no %q in:\n%s", want, out)
				}
			}
			summary := "1 changed ConfigMap/Secret: running pods of 3 workloads keep its old value until they restart"
			if format == FormatJSON {
				summary = `"staleConfig": 1,
    "staleWorkloads": 3`
			}
			if !strings.Contains(out, summary) {
				t.Errorf("no %q in:\n%s", summary, out)
			}
		})
	}
}
