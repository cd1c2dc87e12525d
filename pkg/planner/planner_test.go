package planner

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
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
		reason      string
	}{
		{name: "pvc dropped from the chart", base: pvc("data", ""), head: "", object: "data",
			action: plan.ActionDelete, destructive: true, reason: "deletes its volume's data"},
		{name: "kept by resource policy", base: pvc("data", "helm.sh/resource-policy: keep"), head: "", object: "data",
			action: plan.ActionNoop, reason: "kept (helm.sh/resource-policy: keep)"},
		{name: "renamed claim: the new one is destructive too", base: pvc("data", ""), head: pvc("data-v2", ""), object: "data-v2",
			action: plan.ActionCreate, destructive: true, reason: "looks like a rename of data to data-v2"},
		{name: "unrelated new claim is a plain create", base: pvc("data", ""), head: pvc("data", "") + strings.Replace(pvc("cache", ""), "fast", "slow", 1),
			object: "cache", action: plan.ActionCreate},
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
				if c.Action != tt.action || c.Destructive != tt.destructive {
					t.Fatalf("%s: action %s destructive %v, want %s %v", c.ID, c.Action, c.Destructive, tt.action, tt.destructive)
				}
				if tt.reason != "" && (len(c.Reasons) == 0 || !strings.Contains(c.Reasons[len(c.Reasons)-1].Message, tt.reason)) {
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
	if c.Action != plan.ActionUpdate || len(c.Reasons) == 0 || c.Reasons[0].Path != "stringData.password" {
		t.Fatalf("want an update of stringData.password, got %+v", c)
	}
	for _, s := range []string{c.Reasons[0].Before, c.Reasons[0].After, fmt.Sprint(c.Before.Object), fmt.Sprint(c.After.Object)} {
		if strings.Contains(s, "hunter2") {
			t.Fatalf("a Secret value reached the plan: %s", s)
		}
	}
}

// foreignCluster is an offline cluster where every object of the new render
// already exists, owned by another release.
type offlineCluster = Offline

type foreignCluster struct{ offlineCluster }

func (f foreignCluster) Get(_ context.Context, obj, _ *manifest.Object) live.State {
	o := obj.Obj.DeepCopy()
	o.SetAnnotations(map[string]string{manifest.ReleaseNameAnnotation: "other", manifest.ReleaseNamespaceAnnotation: "prod"})
	return live.State{Obj: o}
}

func TestTakeOwnership(t *testing.T) {
	for _, adopt := range []bool{false, true} {
		t.Run(fmt.Sprintf("take-ownership=%v", adopt), func(t *testing.T) {
			p, err := New(foreignCluster{Offline{Release: "app", Namespace: "prod"}}, "").Plan(context.Background(), Input{
				Release:       plan.Release{Name: "app", Namespace: "prod"},
				NextManifest:  pvc("data", ""),
				TakeOwnership: adopt,
			})
			if err != nil {
				t.Fatal(err)
			}
			c := p.Changes[0]
			if adopt {
				if c.Blocking || c.Class == plan.ClassInvalid || !strings.Contains(strings.Join(c.Notes, "\n"), "--take-ownership adopts it") {
					t.Fatalf("adopted object: %+v", c)
				}
				return
			}
			if !c.Blocking || c.Class != plan.ClassInvalid || !strings.Contains(c.Reasons[0].Message, "Helm refuses to adopt it") {
				t.Fatalf("foreign object without --take-ownership: %+v", c)
			}
		})
	}
}

const stsWithClaims = `---
# Source: app/templates/sts.yaml
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  serviceName: db
  persistentVolumeClaimRetentionPolicy: {whenDeleted: %s}
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: postgres}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`

const pvYAML = `---
# Source: app/templates/pv.yaml
apiVersion: v1
kind: PersistentVolume
metadata: {name: disk}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: %s
  hostPath: {path: /tmp/disk}
`

// TestRetentionInDeletions: what else a deletion takes with it.
func TestRetentionInDeletions(t *testing.T) {
	tests := []struct {
		name, base, object string
		want               string // in the last reason; "" means only the deletion's own reason
	}{
		{"StatefulSet whenDeleted: Delete names its claims", strings.Replace(stsWithClaims, "%s", "Delete", 1), "db",
			"PersistentVolumeClaims are deleted with it (data-db-0, data-db-1)"},
		{"StatefulSet whenDeleted: Retain keeps them", strings.Replace(stsWithClaims, "%s", "Retain", 1), "db", ""},
		{"PV reclaimPolicy Delete", strings.Replace(pvYAML, "%s", "Delete", 1), "disk", "reclaimPolicy Delete: its storage and data are deleted"},
		{"PV reclaimPolicy Retain", strings.Replace(pvYAML, "%s", "Retain", 1), "disk", "reclaimPolicy Retain: the storage is kept"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(Offline{Release: "app", Namespace: "prod"}, "").Plan(context.Background(), Input{
				Release: plan.Release{Name: "app", Namespace: "prod"}, PreviousManifest: tt.base,
			})
			if err != nil {
				t.Fatal(err)
			}
			c := p.Changes[0]
			if c.Action != plan.ActionDelete || !c.Destructive {
				t.Fatalf("want a destructive delete, got %+v", c)
			}
			last := c.Reasons[len(c.Reasons)-1].Message
			if tt.want == "" && len(c.Reasons) != 1 || tt.want != "" && !strings.Contains(last, tt.want) {
				t.Errorf("reasons %+v, want the last to say %q", c.Reasons, tt.want)
			}
		})
	}
}
