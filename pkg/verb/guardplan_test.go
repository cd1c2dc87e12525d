package verb

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/guard"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// TestGateGuardedDeletes: with the guard in force, a delete it refuses
// that the planner did not find destructive (an uninstall's StatefulSet)
// becomes destructive with its reason and a fingerprint; an orphaning
// delete, a kind it does not guard and a plan without the guard stay as
// they were, and nothing is written.
func TestGateGuardedDeletes(t *testing.T) {
	guardObjs, err := guard.Objects()
	if err != nil {
		t.Fatal(err)
	}
	sts := func() plan.Change {
		return plan.Change{ID: manifest.ObjectID{Group: "apps", Kind: "StatefulSet", Namespace: "prod", Name: "db"}, APIVersion: "apps/v1",
			Action: plan.ActionDelete, Class: plan.ClassRecreatable,
			Before: &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": map[string]any{"name": "db"}}}}
	}
	cm := plan.Change{ID: manifest.ObjectID{Kind: "ConfigMap", Namespace: "prod", Name: "c"}, APIVersion: "v1", Action: plan.ActionDelete,
		Before: &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}}
	tests := []struct {
		name      string
		installed bool
		orphan    bool
		want      bool
	}{
		{"guard in force", true, false, true},
		{"orphaning delete", true, true, false},
		{"no guard", false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mapper := meta.NewDefaultRESTMapper(nil)
			mapper.Add(guard.PolicyGVK, meta.RESTScopeRoot)
			mapper.Add(guard.BindingGVK, meta.RESTScopeRoot)
			var objs []runtime.Object
			if tt.installed {
				objs = []runtime.Object{guardObjs[0], guardObjs[1]}
			}
			gv := guard.PolicyGVK.GroupVersion()
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
				gv.WithResource("validatingadmissionpolicies"): "ValidatingAdmissionPolicyList", gv.WithResource("validatingadmissionpolicybindings"): "ValidatingAdmissionPolicyBindingList",
			}, objs...)
			c := &Config{Cluster: &live.Cluster{Dynamic: client, Mapper: mapper}, Sanitizer: redact.NewSanitizer(redact.NewMasker())}
			p := &plan.Plan{Changes: []plan.Change{sts(), cm}}
			if err := c.gateGuardedDeletes(context.Background(), p, tt.orphan); err != nil {
				t.Fatal(err)
			}
			got := p.Changes[0]
			if got.Destructive != tt.want || (got.Fingerprint != "") != tt.want {
				t.Errorf("StatefulSet: destructive %v fingerprint %q, want destructive %v", got.Destructive, got.Fingerprint, tt.want)
			}
			if tt.want && (len(got.Reasons) != 1 || !strings.HasPrefix(got.Reasons[0].Message, guardRefuses) || !strings.Contains(got.Reasons[0].Message, guard.AckAnnotation)) {
				t.Errorf("StatefulSet's reasons: %+v", got.Reasons)
			}
			if p.Changes[1].Destructive || len(p.Changes[1].Reasons) > 0 {
				t.Errorf("the ConfigMap's delete changed: %+v", p.Changes[1])
			}
			for _, a := range client.Actions() {
				if a.GetVerb() != "get" {
					t.Errorf("sent %s %s", a.GetVerb(), a.GetResource().Resource)
				}
			}
		})
	}
}

// TestGateGuardedReclaim: with the guard in force, an update that turns a
// volume's reclaim policy to Delete blocks (the tool acknowledges no
// update) unless the live volume is acknowledged already; without the
// guard, or for another change, nothing changes.
func TestGateGuardedReclaim(t *testing.T) {
	guardObjs, err := guard.Objects()
	if err != nil {
		t.Fatal(err)
	}
	pvGVK := schema.GroupVersionKind{Version: "v1", Kind: "PersistentVolume"}
	pvObj := func(policy string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "PersistentVolume",
			"metadata": map[string]any{"name": "data"}, "spec": map[string]any{"persistentVolumeReclaimPolicy": policy}}}
	}
	change := func(from, to string) plan.Change {
		return plan.Change{ID: manifest.ObjectID{Kind: "PersistentVolume", Name: "data"}, APIVersion: "v1",
			Action: plan.ActionUpdate, Class: plan.ClassInPlace, Before: pvObj(from), After: pvObj(to)}
	}
	tests := []struct {
		name           string
		installed      bool
		from, to       string
		acked, blocked bool
	}{
		{name: "to Delete", installed: true, from: "Retain", to: "Delete", blocked: true},
		{name: "to Delete, acknowledged", installed: true, from: "Retain", to: "Delete", acked: true},
		{name: "to Retain", installed: true, from: "Delete", to: "Retain"},
		{name: "no guard", from: "Retain", to: "Delete"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mapper := meta.NewDefaultRESTMapper(nil)
			mapper.Add(guard.PolicyGVK, meta.RESTScopeRoot)
			mapper.Add(guard.BindingGVK, meta.RESTScopeRoot)
			mapper.Add(pvGVK, meta.RESTScopeRoot)
			stored := pvObj(tt.from)
			stored.SetUID("0b5e3c1e-1111")
			if tt.acked {
				stored.SetAnnotations(map[string]string{guard.AckAnnotation: "0b5e3c1e-1111"})
			}
			objs := []runtime.Object{stored}
			if tt.installed {
				objs = append(objs, guardObjs[0], guardObjs[1])
			}
			gv := guard.PolicyGVK.GroupVersion()
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
				gv.WithResource("validatingadmissionpolicies"): "ValidatingAdmissionPolicyList", gv.WithResource("validatingadmissionpolicybindings"): "ValidatingAdmissionPolicyBindingList",
				pvGVK.GroupVersion().WithResource("persistentvolumes"): "PersistentVolumeList",
			}, objs...)
			c := &Config{Cluster: &live.Cluster{Dynamic: client, Mapper: mapper}, Sanitizer: redact.NewSanitizer(redact.NewMasker())}
			p := &plan.Plan{Changes: []plan.Change{change(tt.from, tt.to)}}
			if err := c.gateGuardedDeletes(context.Background(), p, false); err != nil {
				t.Fatal(err)
			}
			got := p.Changes[0]
			if got.Blocking != tt.blocked || got.Destructive != tt.blocked {
				t.Fatalf("blocking %v destructive %v, want %v: %+v", got.Blocking, got.Destructive, tt.blocked, got.Reasons)
			}
			if tt.blocked && (len(got.Reasons) == 0 || !strings.HasPrefix(got.Reasons[0].Message, guardRefuses) || got.Fingerprint == "") {
				t.Errorf("reasons %+v, fingerprint %q", got.Reasons, got.Fingerprint)
			}
			for _, a := range client.Actions() {
				if a.GetVerb() != "get" {
					t.Errorf("sent %s %s", a.GetVerb(), a.GetResource().Resource)
				}
			}
		})
	}
}
