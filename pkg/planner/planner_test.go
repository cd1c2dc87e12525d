package planner

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/clusterfake"
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
			p := offlinePlan(t, redact.NewMasker(), tt.base, tt.head)
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
	p, err := New(Offline{Release: "app", Namespace: "prod"}.Parts(), "").Plan(context.Background(), Input{
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
		p, err := New(Offline{Release: "app", Namespace: "prod"}.Parts(), "").Plan(context.Background(), Input{
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

// foreign is an offline cluster where every object of the new render
// already exists, owned by another release.
func foreign() Cluster {
	c := Offline{Release: "app", Namespace: "prod"}.Parts()
	c.Objects = clusterfake.Objects(func(_ context.Context, obj, _ *manifest.Object) live.State {
		o := obj.Obj.DeepCopy()
		o.SetAnnotations(map[string]string{manifest.ReleaseNameAnnotation: "other", manifest.ReleaseNamespaceAnnotation: "prod"})
		return live.State{Obj: o}
	})
	return c
}

func TestTakeOwnership(t *testing.T) {
	for _, adopt := range []bool{false, true} {
		t.Run(fmt.Sprintf("take-ownership=%v", adopt), func(t *testing.T) {
			p, err := New(foreign(), "").Plan(context.Background(), Input{
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
		{"PV reclaimPolicy Delete", strings.Replace(pvYAML, "%s", "Delete", 1), "disk", "PersistentVolume disk (1Gi) has reclaimPolicy Delete: its storage and data are deleted"},
		{"PV reclaimPolicy Retain", strings.Replace(pvYAML, "%s", "Retain", 1), "disk", "reclaimPolicy Retain: the storage is kept"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(Offline{Release: "app", Namespace: "prod"}.Parts(), "").Plan(context.Background(), Input{
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

// TestDeletionReasonPerOperation: why an object of the last release goes
// depends on the operation; an upgrade's (and an install's) text is the one
// it always was.
func TestDeletionReasonPerOperation(t *testing.T) {
	const deletes = ": Helm deletes it (no helm.sh/resource-policy: keep); deleting a PersistentVolumeClaim deletes its volume's data (reclaimPolicy Delete)"
	const kept = " but kept (helm.sh/resource-policy: keep): Helm leaves it in the cluster, no longer managed by the release"
	tests := []struct {
		op   plan.Operation
		gone string
	}{
		{"", "removed from the chart"},
		{plan.OperationUpgrade, "removed from the chart"},
		{plan.OperationInstall, "removed from the chart"},
		{plan.OperationRollback, "not in the revision rolled back to"},
		{plan.OperationUninstall, "uninstalled with the release"},
	}
	for _, tt := range tests {
		for _, c := range []struct{ annotations, want string }{{"", tt.gone + deletes}, {"helm.sh/resource-policy: keep", tt.gone + kept}} {
			t.Run(string(tt.op)+" "+c.annotations, func(t *testing.T) {
				p, err := New(Offline{Release: "app", Namespace: "prod"}.Parts(), "").Plan(context.Background(), Input{
					Release:          plan.Release{Name: "app", Namespace: "prod", Operation: tt.op},
					PreviousManifest: pvc("data", c.annotations),
				})
				if err != nil {
					t.Fatal(err)
				}
				if len(p.Changes) != 1 || len(p.Changes[0].Reasons) == 0 || p.Changes[0].Reasons[0].Message != c.want {
					t.Fatalf("changes %+v, want a first reason %q", p.Changes, c.want)
				}
			})
		}
	}
}

// TestUninstallVerdicts: an uninstall's deletions are data-loss (blocking
// until acknowledged) where the data does not come back with a re-install,
// recreatable otherwise; a kept object is no deletion.
func TestUninstallVerdicts(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n"
	ns := "apiVersion: v1\nkind: Namespace\nmetadata: {name: tenant}\n"
	tests := []struct {
		name, base, object string
		action             plan.Action
		class              plan.Class
	}{
		{"templated claim", pvc("data", ""), "data", plan.ActionDelete, plan.ClassDataLoss},
		{"kept claim", pvc("data", "helm.sh/resource-policy: keep"), "data", plan.ActionNoop, plan.ClassNone},
		{"PersistentVolume", strings.Replace(pvYAML, "%s", "Retain", 1), "disk", plan.ActionDelete, plan.ClassDataLoss},
		{"Namespace", ns, "tenant", plan.ActionDelete, plan.ClassDataLoss},
		{"StatefulSet keeping its claims", strings.Replace(stsWithClaims, "%s", "Retain", 1), "db", plan.ActionDelete, plan.ClassRecreatable},
		{"StatefulSet deleting its claims", strings.Replace(stsWithClaims, "%s", "Delete", 1), "db", plan.ActionDelete, plan.ClassDataLoss},
		{"ConfigMap", cm, "settings", plan.ActionDelete, plan.ClassRecreatable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(Offline{Release: "app", Namespace: "prod"}.Parts(), "").Plan(context.Background(), Input{
				Release: plan.Release{Name: "app", Namespace: "prod", Operation: plan.OperationUninstall}, PreviousManifest: tt.base,
			})
			if err != nil {
				t.Fatal(err)
			}
			c := p.Changes[0]
			if c.ID.Name != tt.object || c.Action != tt.action || c.Class != tt.class || c.Destructive != (tt.class == plan.ClassDataLoss) {
				t.Errorf("%s: action %s class %q destructive %v, want %s %q", c.ID, c.Action, c.Class, c.Destructive, tt.action, tt.class)
			}
			if tt.action == plan.ActionNoop && c.Reasons[0].Path != KeptPath {
				t.Errorf("kept: reasons %+v, want the path %s", c.Reasons, KeptPath)
			}
		})
	}
}

// TestSelfAcknowledgementInvalid: a render that sets the guard's
// acknowledgement on any object — created, updated, its value whatever —
// is invalid and blocking, with the reason first; one that does not is not.
func TestSelfAcknowledgementInvalid(t *testing.T) {
	cm := "---\n# Source: app/templates/c.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c%s}\ndata: {a: b}\n"
	ack := ", annotations: {safe-upgrade.io/ack-delete: 0b5e3c1e-1111-2222-3333-444455556666}"
	tests := []struct {
		name, base, head string
		invalid          bool
	}{
		{name: "created with it", head: fmt.Sprintf(cm, ack), invalid: true},
		{name: "updated to it", base: fmt.Sprintf(cm, ""), head: fmt.Sprintf(cm, ack), invalid: true},
		{name: "empty value", base: fmt.Sprintf(cm, ""), head: fmt.Sprintf(cm, `, annotations: {safe-upgrade.io/ack-delete: ""}`), invalid: true},
		{name: "another annotation", base: fmt.Sprintf(cm, ""), head: fmt.Sprintf(cm, ", annotations: {safe-upgrade.io/other: x}")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := offlinePlan(t, redact.NewMasker(), tt.base, tt.head).Changes[0]
			got := c.Class == plan.ClassInvalid && c.Blocking && c.Destructive
			if got != tt.invalid {
				t.Fatalf("invalid %v, want %v: %+v", got, tt.invalid, c)
			}
			if tt.invalid && !strings.Contains(c.Reasons[0].Message, "a chart cannot acknowledge its own deletion") {
				t.Errorf("first reason %+v", c.Reasons[0])
			}
		})
	}
}
