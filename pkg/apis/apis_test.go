package apis_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apis"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
)

func TestTable(t *testing.T) {
	tests := []struct {
		gv, kind            string
		minor               int
		removed, deprecated bool
		removedIn           string
		replacementContains string
	}{
		{"policy/v1beta1", "PodDisruptionBudget", 25, true, false, "1.25", "policy/v1 PodDisruptionBudget"},
		{"policy/v1beta1", "PodDisruptionBudget", 24, false, true, "", "policy/v1"},
		{"policy/v1beta1", "PodDisruptionBudget", 20, false, false, "", ""},
		{"policy/v1beta1", "PodSecurityPolicy", 37, true, false, "1.25", "Pod Security Admission"},
		{"batch/v1beta1", "CronJob", 25, true, false, "1.25", "batch/v1 CronJob"},
		{"extensions/v1beta1", "Ingress", 22, true, false, "1.22", "networking.k8s.io/v1 Ingress"},
		{"extensions/v1beta1", "Deployment", 16, true, false, "1.16", "apps/v1 Deployment"},
		{"networking.k8s.io/v1beta1", "Ingress", 22, true, false, "1.22", "networking.k8s.io/v1"},
		{"networking.k8s.io/v1beta1", "IPAddress", 37, false, false, "", ""},
		{"apps/v1beta1", "StatefulSet", 16, true, false, "1.16", "apps/v1"},
		{"apps/v1beta2", "DaemonSet", 37, true, false, "1.16", "apps/v1"},
		{"autoscaling/v2beta1", "HorizontalPodAutoscaler", 25, true, false, "1.25", "autoscaling/v2"},
		{"autoscaling/v2beta2", "HorizontalPodAutoscaler", 25, false, true, "", "autoscaling/v2"},
		{"autoscaling/v2beta2", "HorizontalPodAutoscaler", 26, true, false, "1.26", "autoscaling/v2"},
		{"flowcontrol.apiserver.k8s.io/v1beta1", "FlowSchema", 26, true, false, "1.26", "flowcontrol.apiserver.k8s.io/v1"},
		{"flowcontrol.apiserver.k8s.io/v1beta2", "FlowSchema", 29, true, false, "1.29", ""},
		{"storage.k8s.io/v1beta1", "CSIStorageCapacity", 27, true, false, "1.27", "storage.k8s.io/v1"},
		{"storage.k8s.io/v1beta1", "CSIStorageCapacity", 26, false, true, "", ""},
		{"storage.k8s.io/v1beta1", "StorageClass", 22, true, false, "1.22", ""},
		{"v1", "Endpoints", 37, false, true, "", "EndpointSlice"},
		{"apps/v1", "Deployment", 37, false, false, "", ""},
		{"example.com/v1alpha1", "Widget", 37, false, false, "", ""},
	}
	for _, tt := range tests {
		gvk := schema.FromAPIVersionAndKind(tt.gv, tt.kind)
		s := apis.ForMinor(tt.minor)(gvk)
		if s.Removed != tt.removed || s.Deprecated != tt.deprecated {
			t.Errorf("%s %s at 1.%d: removed %v deprecated %v, want %v %v", tt.gv, tt.kind, tt.minor, s.Removed, s.Deprecated, tt.removed, tt.deprecated)
			continue
		}
		if tt.removedIn != "" && !strings.Contains(s.Message, "removed in Kubernetes "+tt.removedIn) {
			t.Errorf("%s %s: message %q does not say removed in Kubernetes %s", tt.gv, tt.kind, s.Message, tt.removedIn)
		}
		if !strings.Contains(s.Message, tt.replacementContains) {
			t.Errorf("%s %s: message %q does not name %q", tt.gv, tt.kind, s.Message, tt.replacementContains)
		}
	}
	if apis.GroupVersionServed("policy/v1beta1", 25) || !apis.GroupVersionServed("policy/v1beta1", 24) || !apis.GroupVersionServed("policy/v1", 37) {
		t.Error("apis.GroupVersionServed(policy/v1beta1) wrong around 1.25")
	}
}

func TestParseMinor(t *testing.T) {
	for in, want := range map[string]int{"1.24.0": 24, "v1.37": 37, "v1.30.2-gke.1": 30, "1.9": 9} {
		if got, err := apis.ParseMinor(in); err != nil || got != want {
			t.Errorf("apis.ParseMinor(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "2.1.0", "1", "1.x"} {
		if _, err := apis.ParseMinor(in); err == nil {
			t.Errorf("apis.ParseMinor(%q) accepted", in)
		}
	}
}

const pdbBeta = `---
# Source: app/templates/pdb.yaml
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata: {name: web}
spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}
`

var pdbV1 = strings.Replace(pdbBeta, "policy/v1beta1", "policy/v1", 1)

const hpaV2beta2 = `---
# Source: app/templates/hpa.yaml
apiVersion: autoscaling/v2beta2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}, minReplicas: 1, maxReplicas: 3}
`

// markedPlan plans base -> head offline, as the planner does, and marks it.
func markedPlan(t *testing.T, base, head string, check apis.Checker) *plan.Plan {
	t.Helper()
	p, err := planner.New(planner.Offline{Release: "app", Namespace: "prod"}.Parts(), "").Plan(context.Background(), planner.Input{
		Release:          plan.Release{Name: "app", Namespace: "prod"},
		PreviousManifest: base, NextManifest: head,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := apis.Mark(p, base, head, "prod", manifest.StaticScoper{}, check); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMark(t *testing.T) {
	tests := []struct {
		name       string
		base, head string
		minor      int
		class      plan.Class
		contains   string
		note       string
	}{
		{name: "head adds a policy/v1beta1 PDB", base: "", head: pdbBeta, minor: 37,
			class: plan.ClassInvalid, contains: "removed in Kubernetes 1.25"},
		{name: "head keeps an unchanged policy/v1beta1 PDB", base: pdbBeta, head: pdbBeta, minor: 25,
			class: plan.ClassInvalid, contains: "helm mapkubeapis"},
		{name: "head moves the PDB to policy/v1; the last release still holds v1beta1", base: pdbBeta, head: pdbV1, minor: 30,
			class: plan.ClassInvalid, contains: "refuses the whole upgrade"},
		{name: "policy/v1beta1 still served by 1.24: deprecated", base: "", head: pdbBeta, minor: 24,
			note: "deprecated since Kubernetes 1.21"},
		{name: "autoscaling/v2beta2 on 1.25: deprecated, removed in 1.26", base: "", head: hpaV2beta2, minor: 25,
			note: "removed in 1.26"},
		{name: "served API: untouched", base: pdbV1, head: pdbV1, minor: 37},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := markedPlan(t, tt.base, tt.head, apis.ForMinor(tt.minor))
			if len(p.Changes) != 1 {
				t.Fatalf("changes = %+v", p.Changes)
			}
			c := p.Changes[0]
			if c.Class != tt.class {
				t.Fatalf("class = %q, want %q (%+v)", c.Class, tt.class, c)
			}
			if tt.class == plan.ClassInvalid {
				if !c.Destructive || !c.Blocking || c.Fingerprint == "" {
					t.Errorf("invalid change not blocking: %+v", c)
				}
				if len(c.Reasons) == 0 || !strings.Contains(c.Reasons[0].Message, tt.contains) || c.Reasons[0].Path != "apiVersion" {
					t.Errorf("reasons = %+v, want first containing %q", c.Reasons, tt.contains)
				}
			} else if c.Blocking || c.Destructive {
				t.Errorf("served API marked: %+v", c)
			}
			if tt.note != "" && !strings.Contains(strings.Join(c.Notes, "\n"), tt.note) {
				t.Errorf("notes = %q, want %q", c.Notes, tt.note)
			}
		})
	}
}

// TestMarkLive is the situation helm-mapkubeapis exists for: the cluster was
// upgraded under a release whose stored manifest holds an API it no longer
// serves. Helm's upgrade fails on it even when the chart moved on; the plan
// names the object and the fix instead of a silent no-op.
func TestMarkLive(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "policy", Version: "v1", Kind: "PodDisruptionBudget"},
		{Group: "", Version: "v1", Kind: "Endpoints"},
	} {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	widgetCRD := `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.gateway.networking.k8s.io}
spec:
  group: gateway.networking.k8s.io
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: Widget
metadata: {name: w}
`
	tests := []struct {
		name, base, head string
		id               string
		blocking         bool
		contains         string
	}{
		{name: "chart moved to policy/v1, the stored release still holds v1beta1", base: pdbBeta, head: pdbV1, id: "web",
			blocking: true, contains: "helm mapkubeapis"},
		{name: "object dropped from the chart, the stored release holds v1beta1", base: pdbBeta, head: "", id: "web",
			blocking: true, contains: "removed in Kubernetes 1.25"},
		{name: "served everywhere", base: pdbV1, head: pdbV1, id: "web"},
		{name: "a kind whose CRD the release brings is not a removed API", base: "", head: widgetCRD, id: "w"},
		{name: "deprecated and served: a note", base: "", head: "---\napiVersion: v1\nkind: Endpoints\nmetadata: {name: web}\n", id: "web",
			contains: "deprecated since Kubernetes 1.33"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := markedPlan(t, tt.base, tt.head, apis.ForCluster(mapper, 36))
			var c *plan.Change
			for i := range p.Changes {
				if p.Changes[i].ID.Name == tt.id {
					c = &p.Changes[i]
				}
			}
			if c == nil {
				t.Fatalf("no change for %s in %+v", tt.id, p.Changes)
			}
			if c.Blocking != tt.blocking {
				t.Fatalf("blocking = %v, want %v: %+v", c.Blocking, tt.blocking, c)
			}
			text := strings.Join(c.Notes, "\n")
			for _, r := range c.Reasons {
				text += "\n" + r.Message
			}
			if tt.contains != "" && !strings.Contains(text, tt.contains) {
				t.Fatalf("reasons and notes %q lack %q", text, tt.contains)
			}
			if tt.blocking && (c.Reasons[0].Source != plan.SourceServer || !strings.Contains(c.Reasons[0].Message, "PodDisruptionBudget \"web\"")) {
				t.Fatalf("first reason %+v does not name the object from the server's discovery", c.Reasons[0])
			}
		})
	}
}
