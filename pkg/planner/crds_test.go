package planner

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/clusterfake"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/helmtest"
)

// crdObjects is a cluster whose only live object is crd (none if ""),
// stored with its v1 version.
func crdObjects(crd string) clusterfake.Objects {
	return func(_ context.Context, obj, _ *manifest.Object) live.State {
		if crd == "" || obj.GVK.Kind != "CustomResourceDefinition" {
			return live.State{}
		}
		var m map[string]interface{}
		if err := yaml.Unmarshal([]byte(crd), &m); err != nil {
			return live.State{Err: err}
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetResourceVersion("7")
		_ = unstructured.SetNestedStringSlice(u.Object, []string{"v1"}, "status", "storedVersions")
		return live.State{Obj: u}
	}
}

func TestCRDChanges(t *testing.T) {
	file := []CRDFile{{Name: "app/crds/gadgets.yaml", Data: helmtest.GadgetCRD("example.com", true)}}
	tests := []struct {
		name     string
		live     string // the live CRD; "" none
		install  bool
		skipCRDs bool
		template bool // the templates define the CRD too
		action   plan.Action
		class    plan.Class
		destr    bool
		want     []string // in the reasons and notes
		counted  int      // LISTs of custom resources
	}{
		{name: "same as live", live: helmtest.GadgetCRD("example.com", true), action: plan.ActionNoop,
			want: []string{"helm upgrade never applies crds/", "kubectl apply -f app/crds/gadgets.yaml"}},
		{name: "drops a served version", live: helmtest.GadgetCRD("example.com", false), action: plan.ActionUpdate, class: plan.ClassManual, destr: true, counted: 1,
			want: []string{"spec.versions[v1alpha1]: served version v1alpha1 removed", "3 existing Gadget resource(s) in all namespaces are affected", "so a change to it does not happen through the upgrade"}},
		{name: "drops a served version, --skip-crds", live: helmtest.GadgetCRD("example.com", false), skipCRDs: true, action: plan.ActionUpdate, class: plan.ClassManual, destr: true, counted: 1,
			want: []string{"--skip-crds changes nothing here"}},
		{name: "absent on upgrade", action: plan.ActionCreate, class: plan.ClassManual,
			want: []string{"not in the cluster: helm upgrade does not create it (Helm creates crds/ only on install)"}},
		{name: "absent on install", install: true, action: plan.ActionCreate,
			want: []string{"the install creates it before the chart's other objects"}},
		{name: "absent on install, --skip-crds", install: true, skipCRDs: true, action: plan.ActionCreate, class: plan.ClassManual,
			want: []string{"--skip-crds: the install does not create it"}},
		{name: "present on install", install: true, live: helmtest.GadgetCRD("example.com", false), action: plan.ActionUpdate, class: plan.ClassManual, destr: true, counted: 1,
			want: []string{"the install leaves it as it is"}},
		{name: "in the templates too", template: true, action: plan.ActionCreate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			counter := &clusterfake.Counter{N: 3}
			cluster := Offline{Release: "app", Namespace: "prod"}.Parts()
			cluster.Offline, cluster.Objects, cluster.Counter = false, crdObjects(tt.live), counter
			in := Input{Release: plan.Release{Name: "app", Namespace: "prod", Operation: plan.InstallOrUpgrade(tt.install)}, CRDs: file, SkipCRDs: tt.skipCRDs}
			if tt.template {
				in.NextManifest = "# Source: app/templates/crd.yaml\n" + helmtest.GadgetCRD("example.com", true)
			}
			p, err := New(cluster, "").Plan(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Changes) != 1 {
				t.Fatalf("want 1 change, got %+v", p.Changes)
			}
			c := p.Changes[0]
			if c.Action != tt.action || c.Class != tt.class || c.Destructive != tt.destr || c.Blocking {
				t.Fatalf("got %s %s destructive=%v blocking=%v, want %s %s %v: %+v", c.Action, c.Class, c.Destructive, c.Blocking, tt.action, tt.class, tt.destr, c.Reasons)
			}
			if tt.template && c.Source != "app/templates/crd.yaml" {
				t.Errorf("source %q: the templates' CRD is planned, not crds/'", c.Source)
			}
			if !tt.template && c.Source != "app/crds/gadgets.yaml" {
				t.Errorf("source %q", c.Source)
			}
			if c.Destructive == (c.Fingerprint == "") {
				t.Errorf("fingerprint %q for destructive=%v", c.Fingerprint, c.Destructive)
			}
			var text []string
			for _, r := range c.Reasons {
				text = append(text, r.Path+": "+r.Message)
			}
			all := strings.Join(append(text, c.Notes...), "\n")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("reasons and notes lack %q:\n%s", w, all)
				}
			}
			if counted := counter.Counted; len(counted) != tt.counted || tt.counted > 0 && counted[0] != (schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}) {
				t.Errorf("counted %v, want %d LIST(s) of example.com/v1 gadgets", counter.Counted, tt.counted)
			}
			if c.Class == plan.ClassManual && (p.HasChanges() || p.Summary().Manual != 1) {
				t.Errorf("a manual change counts as pending (HasChanges %v) or not as manual (%+v)", p.HasChanges(), p.Summary())
			}
		})
	}
}

// TestCRDChangesOffline: offline, the base chart's crds/ stand in for the
// live CRDs, and nothing is counted; a manifest base compares nothing.
func TestCRDChangesOffline(t *testing.T) {
	cluster := Offline{Release: "app", Namespace: "prod"}.Parts()
	in := Input{Release: plan.Release{Name: "app", Namespace: "prod"},
		CRDs:         []CRDFile{{Name: "app/crds/gadgets.yaml", Data: helmtest.GadgetCRD("example.com", true)}},
		PreviousCRDs: []CRDFile{{Name: "app/crds/gadgets.yaml", Data: helmtest.GadgetCRD("example.com", false)}}}
	p, err := New(cluster, "").Plan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 1 || !p.Changes[0].Destructive || p.Changes[0].Class != plan.ClassManual {
		t.Fatalf("want one destructive manual change, got %+v", p.Changes)
	}
	last := p.Changes[0].Reasons[len(p.Changes[0].Reasons)-1]
	if !strings.Contains(last.Message, "offline: the existing Gadget resources were not counted") {
		t.Errorf("last reason %+v, want the count's absence said", last)
	}

	in.PreviousCRDs, in.BaseCRDsUnknown = nil, true
	p, err = New(cluster, "").Plan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 0 || !strings.Contains(strings.Join(p.Notes, "\n"), "crds/ CRDs were not compared") {
		t.Errorf("manifest base: changes %+v, notes %q", p.Changes, p.Notes)
	}
}

// TestTemplateCRDs: a CRD in the templates, which Helm does apply, that
// drops a served version is a destructive update.
func TestTemplateCRDs(t *testing.T) {
	tmpl := "# Source: app/templates/crd.yaml\n"
	for _, drop := range []bool{false, true} {
		p, err := New(Offline{Release: "app", Namespace: "prod"}.Parts(), "").Plan(context.Background(), Input{
			Release:          plan.Release{Name: "app", Namespace: "prod"},
			PreviousManifest: tmpl + helmtest.GadgetCRD("example.com", false), NextManifest: tmpl + helmtest.GadgetCRD("example.com", drop),
		})
		if err != nil {
			t.Fatal(err)
		}
		c := p.Changes[0]
		if c.Destructive != drop || drop && (c.Action != plan.ActionUpdate || c.Class == plan.ClassManual || c.Fingerprint == "" ||
			!strings.Contains(c.Reasons[len(c.Reasons)-2].Message, "served version v1alpha1 removed")) {
			t.Errorf("drop v1alpha1 %v: %s %s destructive=%v %+v", drop, c.Action, c.Class, c.Destructive, c.Reasons)
		}
	}
}

// TestCRDMovedToCRDsDir: a CRD moved from the templates to crds/ is
// deleted by the upgrade (it left the release manifest), and planned once,
// as that deletion.
func TestCRDMovedToCRDsDir(t *testing.T) {
	p, err := New(Offline{Release: "app", Namespace: "prod"}.Parts(), "").Plan(context.Background(), Input{
		Release:          plan.Release{Name: "app", Namespace: "prod"},
		PreviousManifest: "# Source: app/templates/crd.yaml\n" + helmtest.GadgetCRD("example.com", false),
		CRDs:             []CRDFile{{Name: "app/crds/gadgets.yaml", Data: helmtest.GadgetCRD("example.com", false)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 1 || p.Changes[0].Action != plan.ActionDelete || !p.Changes[0].Destructive {
		t.Fatalf("want one destructive deletion, got %+v", p.Changes)
	}
}

// TestTemplatedCRDDeletionCounted: deleting a templated CRD (an uninstall,
// or a CRD removed from the templates) says how many custom resources go
// with it; offline, that they were not counted.
func TestTemplatedCRDDeletionCounted(t *testing.T) {
	crd := "# Source: app/templates/crd.yaml\n" + helmtest.GadgetCRD("example.com", false)
	for _, offline := range []bool{false, true} {
		counter := &clusterfake.Counter{N: 3}
		cluster := Offline{Release: "app", Namespace: "prod"}.Parts()
		want := "offline: the existing Gadget resources were not counted"
		if !offline {
			cluster.Offline, cluster.Objects, cluster.Counter = false, crdObjects(helmtest.GadgetCRD("example.com", false)), counter
			want = "3 existing Gadget resource(s) in all namespaces are affected"
		}
		p, err := New(cluster, "").Plan(context.Background(), Input{
			Release: plan.Release{Name: "app", Namespace: "prod", Operation: plan.OperationUninstall}, PreviousManifest: crd,
		})
		if err != nil {
			t.Fatal(err)
		}
		c := p.Changes[0]
		if c.Action != plan.ActionDelete || c.Class != plan.ClassDataLoss || !c.Destructive || !strings.Contains(c.Reasons[len(c.Reasons)-1].Message, want) {
			t.Errorf("offline %v: %s %s destructive=%v %+v, want a data-loss delete saying %q", offline, c.Action, c.Class, c.Destructive, c.Reasons, want)
		}
	}
}
