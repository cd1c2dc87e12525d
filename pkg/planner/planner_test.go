package planner

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

const pvcYAML = `---
# Source: app/templates/pvc.yaml
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: %s
  annotations: {%s}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
  storageClassName: fast
`

func pvc(name, annotations string) string {
	return strings.NewReplacer("%s", name).Replace(strings.Replace(pvcYAML, "annotations: {%s}", "annotations: {"+annotations+"}", 1))
}

const secret = `---
# Source: app/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: %s}
`

// TestOfflinePlan covers the planner's own rules without a cluster: deletes
// by kind, resource-policy keep, renames, and Secret masking.
func TestOfflinePlan(t *testing.T) {
	tests := []struct {
		name        string
		base, head  string
		object      string
		action      plan.Action
		destructive bool
		blocking    bool
		reason      string
	}{
		{name: "pvc dropped from the chart", base: pvc("data", ""), head: "", object: "data",
			action: plan.ActionDelete, destructive: true, reason: "Helm deletes it (no helm.sh/resource-policy: keep); deleting a PersistentVolumeClaim deletes its volume's data"},
		{name: "kept by resource policy", base: pvc("data", "helm.sh/resource-policy: keep"), head: "", object: "data",
			action: plan.ActionNoop, reason: "kept (helm.sh/resource-policy: keep)"},
		{name: "renamed claim: the new one is destructive too", base: pvc("data", ""), head: pvc("data-v2", ""), object: "data-v2",
			action: plan.ActionCreate, destructive: true, reason: "looks like a rename of data to data-v2"},
		{name: "unrelated new claim is a plain create", base: pvc("data", ""), head: pvc("data", "") + strings.Replace(pvc("cache", ""), "fast", "slow", 1),
			object: "cache", action: plan.ActionCreate},
		{name: "a recreate-required claim blocks", base: pvc("data", ""), head: strings.Replace(pvc("data", ""), "fast", "slow", 1), object: "data",
			action: plan.ActionUpdate, destructive: true, blocking: true, reason: "safe-upgrade never deletes a volume"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(Offline{Release: "app", Namespace: "prod"}, "").Plan(context.Background(), Input{
				Release:          plan.Release{Name: "app", Namespace: "prod"},
				PreviousManifest: tt.base, NextManifest: tt.head,
			})
			if err != nil {
				t.Fatal(err)
			}
			if !p.Offline {
				t.Error("a plan made offline is not marked offline")
			}
			for _, c := range p.Changes {
				if c.ID.Name != tt.object {
					continue
				}
				if c.Action != tt.action || c.Destructive != tt.destructive || c.Blocking != tt.blocking {
					t.Fatalf("%s: action %s destructive %v blocking %v, want %s %v %v", c.ID, c.Action, c.Destructive, c.Blocking, tt.action, tt.destructive, tt.blocking)
				}
				reason := len(c.Reasons) - 1
				if tt.blocking {
					reason = 0 // the gate shows the first reason
				}
				if tt.reason != "" && (len(c.Reasons) == 0 || !strings.Contains(c.Reasons[reason].Message, tt.reason)) {
					t.Fatalf("%s: reasons %+v, want one saying %q", c.ID, c.Reasons, tt.reason)
				}
				return
			}
			t.Fatalf("no change for %s in %+v", tt.object, p.Changes)
		})
	}
}

func TestOfflinePlanMasksSecrets(t *testing.T) {
	p, err := New(Offline{Release: "app", Namespace: "prod"}, "").Plan(context.Background(), Input{
		Release:          plan.Release{Name: "app", Namespace: "prod"},
		PreviousManifest: strings.Replace(secret, "%s", "old-hunter2", 1),
		NextManifest:     strings.Replace(secret, "%s", "new-hunter2", 1),
	})
	if err != nil {
		t.Fatal(err)
	}
	c := p.Changes[0]
	// The server folds stringData into data: the change is where it names it
	// (and where a live plan names it).
	if c.Action != plan.ActionUpdate || len(c.Reasons) == 0 || c.Reasons[0].Path != "data.password" {
		t.Fatalf("want an update of data.password, got %+v", c)
	}
	for _, s := range []string{c.Reasons[0].Before, c.Reasons[0].After, fmt.Sprint(c.Before.Object), fmt.Sprint(c.After.Object)} {
		if strings.Contains(s, "hunter2") {
			t.Fatalf("a Secret value reached the plan: %s", s)
		}
	}
}

// TestOfflineCreateRejected: offline, a new workload whose selector does not
// select its template's labels is invalid, as the server's validation says.
func TestOfflineCreateRejected(t *testing.T) {
	deploy := "---\n# Source: app/templates/d.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: %s}}\n    spec: {containers: [{name: web, image: nginx}]}\n"
	for label, invalid := range map[string]bool{"web": false, "web-green": true} {
		p, err := New(Offline{Release: "app", Namespace: "prod"}, "").Plan(context.Background(), Input{
			Release:      plan.Release{Name: "app", Namespace: "prod"},
			NextManifest: fmt.Sprintf(deploy, label),
		})
		if err != nil {
			t.Fatal(err)
		}
		c := p.Changes[0]
		if got := c.Class == plan.ClassInvalid && c.Blocking && c.Destructive; got != invalid {
			t.Errorf("template labels app=%s: invalid %v, want %v (%+v)", label, got, invalid, c)
		}
		if invalid && (len(c.Reasons) == 0 || c.Reasons[0].Path != "spec.template.metadata.labels" || c.Source != "app/templates/d.yaml") {
			t.Errorf("reasons %+v, source %q", c.Reasons, c.Source)
		}
	}
}
