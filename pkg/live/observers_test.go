package live

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func webhookConfig(name string, rules ...map[string]interface{}) *unstructured.Unstructured {
	var rs []interface{}
	for _, r := range rules {
		rs = append(rs, r)
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
		"metadata": map[string]interface{}{"name": name},
		"webhooks": []interface{}{map[string]interface{}{"name": "w." + name, "rules": rs}},
	}}
}

func rule(ops, groups, resources []interface{}) map[string]interface{} {
	return map[string]interface{}{"operations": ops, "apiGroups": groups, "apiVersions": []interface{}{"*"}, "resources": resources}
}

func policy(name string, constraints map[string]interface{}) *unstructured.Unstructured {
	spec := map[string]interface{}{}
	if constraints != nil {
		spec["matchConstraints"] = constraints
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
		"metadata": map[string]interface{}{"name": name}, "spec": spec,
	}}
}

func admissionMapper(served ...string) meta.RESTMapper {
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: admissionGroup, Version: "v1"}, {Version: "v1"}})
	for _, kind := range served {
		m.Add(schema.GroupVersionKind{Group: admissionGroup, Version: "v1", Kind: kind}, meta.RESTScopeRoot)
	}
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	return m
}

func fakeDynamic(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	lists := map[schema.GroupVersionResource]string{
		{Group: admissionGroup, Version: "v1", Resource: "validatingwebhookconfigurations"}: "ValidatingWebhookConfigurationList",
		{Group: admissionGroup, Version: "v1", Resource: "mutatingwebhookconfigurations"}:   "MutatingWebhookConfigurationList",
		{Group: admissionGroup, Version: "v1", Resource: "validatingadmissionpolicies"}:     "ValidatingAdmissionPolicyList",
		{Group: admissionGroup, Version: "v1", Resource: "mutatingadmissionpolicies"}:       "MutatingAdmissionPolicyList",
	}
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, objs...)
}

// TestAdmissionSees: which webhooks and mutating policies may see an UPDATE
// of a ConfigMap. Versions and selectors are not read: they could only
// narrow. Validating policies are evaluated instead (TestPoliciesAdmit).
func TestAdmissionSees(t *testing.T) {
	all := []interface{}{"*"}
	tests := []struct {
		name string
		objs []runtime.Object
		// forbid makes every LIST fail as RBAC would.
		forbid bool
		// sees: "" when nothing may see the update.
		sees string
	}{
		{name: "nothing installed"},
		{name: "a webhook for another group", objs: []runtime.Object{webhookConfig("certs", rule(all, []interface{}{"cert-manager.io"}, all))}},
		{name: "a webhook for creates only", objs: []runtime.Object{webhookConfig("create", rule([]interface{}{"CREATE"}, []interface{}{""}, []interface{}{"configmaps"}))}},
		{name: "a webhook for pods", objs: []runtime.Object{webhookConfig("pods", rule(all, []interface{}{""}, []interface{}{"pods", "pods/status"}))}},
		{name: "a webhook for everything", objs: []runtime.Object{webhookConfig("all", rule(all, all, all))}, sees: "ValidatingWebhookConfiguration all"},
		{name: "a webhook for configmap updates", objs: []runtime.Object{webhookConfig("cm", rule([]interface{}{"UPDATE"}, []interface{}{""}, []interface{}{"configmaps"}))},
			sees: "ValidatingWebhookConfiguration cm"},
		{name: "subresource rules over-match", objs: []runtime.Object{webhookConfig("sub", rule(all, []interface{}{""}, []interface{}{"configmaps/*"}))}, sees: "sub"},
		{name: "a webhook without rules matches nothing", objs: []runtime.Object{webhookConfig("bare")}},
		{name: "a policy without constraints matches nothing", objs: []runtime.Object{policy("p", nil)}},
		{name: "rules that cannot be read match everything", objs: []runtime.Object{func() runtime.Object {
			w := webhookConfig("odd")
			w.Object["webhooks"] = []interface{}{map[string]interface{}{"name": "w.odd", "rules": "?"}}
			return w
		}()}, sees: "ValidatingWebhookConfiguration odd"},
		{name: "a policy for deployments", objs: []runtime.Object{policy("d", map[string]interface{}{"resourceRules": []interface{}{
			rule(all, []interface{}{"apps"}, []interface{}{"deployments"})}})}},
		// Evaluated by PoliciesAdmit, not seen by its rules alone.
		{name: "a validating policy for configmaps", objs: []runtime.Object{policy("c", map[string]interface{}{"resourceRules": []interface{}{
			rule(all, []interface{}{""}, []interface{}{"configmaps"})}})}},
		{name: "RBAC hides the configuration", forbid: true, sees: "admission configuration unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dyn := fakeDynamic(tc.objs...)
			if tc.forbid {
				dyn.PrependReactor("list", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "", errors.New("no"))
				})
			}
			o := NewObservers(&Cluster{Dynamic: dyn, Mapper: admissionMapper("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy")})
			got := o.AdmissionSees(context.Background(), configMaps, "UPDATE")
			if (got == "") != (tc.sees == "") || !strings.Contains(got, tc.sees) {
				t.Errorf("sees %q, want %q", got, tc.sees)
			}
			first := len(dyn.Actions())
			o.AdmissionSees(context.Background(), configMaps, "UPDATE")
			if !tc.forbid && first != 3 || len(dyn.Actions()) != first {
				t.Errorf("%d then %d requests: want one LIST per served kind (3), once per run", first, len(dyn.Actions()))
			}
		})
	}
}

// TestMayPatch reads the namespace's SelfSubjectRulesReview once, sent with
// dryRun=All, and says "may patch" only on a rule that certainly grants it.
func TestMayPatch(t *testing.T) {
	tests := []struct {
		name       string
		rules      []interface{}
		incomplete bool
		fail       bool
		want       bool
	}{
		{name: "cluster-admin", rules: []interface{}{resourceRuleOf([]interface{}{"*"}, []interface{}{"*"}, []interface{}{"*"}, nil)}, want: true},
		{name: "patch on configmaps", rules: []interface{}{resourceRuleOf([]interface{}{"get", "patch"}, []interface{}{""}, []interface{}{"configmaps"}, nil)}, want: true},
		{name: "read only", rules: []interface{}{resourceRuleOf([]interface{}{"get", "list"}, []interface{}{"*"}, []interface{}{"*"}, nil)}},
		{name: "patch in another group", rules: []interface{}{resourceRuleOf([]interface{}{"patch"}, []interface{}{"apps"}, []interface{}{"configmaps"}, nil)}},
		{name: "patch of other names only", rules: []interface{}{resourceRuleOf([]interface{}{"patch"}, []interface{}{""}, []interface{}{"configmaps"}, []interface{}{"other"})}},
		{name: "patch of this name", rules: []interface{}{resourceRuleOf([]interface{}{"patch"}, []interface{}{""}, []interface{}{"configmaps"}, []interface{}{"settings"})}, want: true},
		{name: "incomplete: another authorizer may deny", rules: []interface{}{resourceRuleOf([]interface{}{"*"}, []interface{}{"*"}, []interface{}{"*"}, nil)}, incomplete: true},
		{name: "review refused", fail: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dyn := fakeDynamic()
			var dryRun []string
			reviews := 0
			dyn.PrependReactor("create", "selfsubjectrulesreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
				reviews++
				dryRun = a.(clienttesting.CreateActionImpl).CreateOptions.DryRun
				if tc.fail {
					return true, nil, apierrors.NewForbidden(rulesReviewGVR.GroupResource(), "", errors.New("no"))
				}
				obj := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
				obj.Object["status"] = map[string]interface{}{"resourceRules": tc.rules, "incomplete": tc.incomplete}
				return true, obj, nil
			})
			o := NewObservers(&Cluster{Dynamic: dyn, Mapper: admissionMapper()})
			for range 3 {
				if got := o.MayPatch(context.Background(), configMaps, "ns", "settings"); got != tc.want {
					t.Fatalf("MayPatch = %v, want %v", got, tc.want)
				}
			}
			if reviews != 1 || len(dryRun) != 1 || dryRun[0] != "All" {
				t.Errorf("%d reviews with dryRun %v; want one, dryRun=All", reviews, dryRun)
			}
		})
	}
}

func resourceRuleOf(verbs, groups, resources, names []interface{}) interface{} {
	r := map[string]interface{}{"verbs": verbs, "apiGroups": groups, "resources": resources}
	if names != nil {
		r["resourceNames"] = names
	}
	return r
}
