package live

import (
	"context"
	"errors"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// vap is a policy on ConfigMap updates with validations.
func vap(name string, validations ...admissionv1.Validation) *admissionv1.ValidatingAdmissionPolicy {
	return &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{},
				MatchPolicy: ptr.To(admissionv1.Equivalent),
				ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				}}}},
			Validations: validations,
		},
	}
}

func vapBinding(policy string, actions ...admissionv1.ValidationAction) *admissionv1.ValidatingAdmissionPolicyBinding {
	if len(actions) == 0 {
		actions = []admissionv1.ValidationAction{admissionv1.Deny}
	}
	return &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: policy},
		Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy, ValidationActions: actions},
	}
}

func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func configMap(ns, name string, labels map[string]interface{}, data map[string]interface{}) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": name, "namespace": ns, "labels": labels}, "data": data,
	}}
}

// policyCluster is a fake cluster serving the admission kinds, ConfigMaps
// and Namespaces, answering SelfSubjectReviews as user "alice".
func policyCluster(t *testing.T, forbid string, objs ...runtime.Object) (*Cluster, *dynamicfake.FakeDynamicClient) {
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: admissionGroup, Version: "v1"}, {Version: "v1"}})
	for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		m.Add(schema.GroupVersionKind{Group: admissionGroup, Version: "v1", Kind: kind}, meta.RESTScopeRoot)
	}
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	lists := map[schema.GroupVersionResource]string{
		{Group: admissionGroup, Version: "v1", Resource: "validatingwebhookconfigurations"}:   "ValidatingWebhookConfigurationList",
		{Group: admissionGroup, Version: "v1", Resource: "validatingadmissionpolicies"}:       "ValidatingAdmissionPolicyList",
		{Group: admissionGroup, Version: "v1", Resource: "validatingadmissionpolicybindings"}: "ValidatingAdmissionPolicyBindingList",
		{Version: "v1", Resource: "configmaps"}:                                               "ConfigMapList",
		{Version: "v1", Resource: "namespaces"}:                                               "NamespaceList",
	}
	var us []runtime.Object
	for _, o := range objs {
		us = append(us, toUnstructured(t, o))
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, us...)
	dyn.PrependReactor("create", "selfsubjectreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured).DeepCopy()
		obj.Object["status"] = map[string]interface{}{"userInfo": map[string]interface{}{
			"username": "alice", "groups": []interface{}{"devs", "system:authenticated"}}}
		return true, obj, nil
	})
	if forbid != "" {
		dyn.PrependReactor("*", forbid, func(a clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "", errors.New("no"))
		})
	}
	return &Cluster{Dynamic: dyn, Mapper: m}, dyn
}

// TestPoliciesAdmit: ValidatingAdmissionPolicies evaluated with the API
// server's admission code on a ConfigMap's update, as the tool's dry-run
// would send it: "" where the server admits it without a warning, else
// why the server is asked.
func TestPoliciesAdmit(t *testing.T) {
	ns := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]interface{}{"name": "team", "labels": map[string]interface{}{"tier": "gold", "kubernetes.io/metadata.name": "team"}}}}
	old := configMap("team", "settings", map[string]interface{}{"helm.sh/chart": "app-1.0.0"}, map[string]interface{}{"mode": "a"})
	next := configMap("team", "settings", map[string]interface{}{"helm.sh/chart": "app-2.0.0"}, map[string]interface{}{"mode": "a"})
	v := func(expr string) admissionv1.Validation { return admissionv1.Validation{Expression: expr} }
	withParams := func(p *admissionv1.ValidatingAdmissionPolicy) *admissionv1.ValidatingAdmissionPolicy {
		p.Spec.ParamKind = &admissionv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
		return p
	}
	paramRef := func(b *admissionv1.ValidatingAdmissionPolicyBinding, name string) *admissionv1.ValidatingAdmissionPolicyBinding {
		b.Spec.ParamRef = &admissionv1.ParamRef{Name: name, ParameterNotFoundAction: ptr.To(admissionv1.DenyAction)}
		return b
	}
	params := configMap("team", "limits", nil, map[string]interface{}{"chart": "app-2.0.0"})
	big := strings.TrimSuffix(strings.Repeat("0,", 120), ",")
	tests := []struct {
		name   string
		objs   []runtime.Object
		forbid string
		server string
		// manager is the request's field manager (helm); ack sets the ack
		// annotation on the new object, strip drops the release one.
		manager    string
		ack, strip bool
		// asks: a part of the reason to ask; "" when derived.
		asks string
	}{
		{name: "no policy"},
		{name: "admits", objs: []runtime.Object{vap("p", v("object.metadata.labels['helm.sh/chart'].startsWith('app-')")), vapBinding("p")}},
		{name: "unbound", objs: []runtime.Object{vap("p", v("false"))}},
		{name: "denies", objs: []runtime.Object{vap("p", admissionv1.Validation{Expression: "object.metadata.labels['helm.sh/chart'] == 'app-1.0.0'",
			MessageExpression: "'no ' + object.metadata.labels['helm.sh/chart']"}), vapBinding("p")}, asks: "ValidatingAdmissionPolicy p refuses or warns"},
		{name: "warns", objs: []runtime.Object{vap("p", v("false")), vapBinding("p", admissionv1.Warn)}, asks: "p refuses or warns"},
		{name: "audits only", objs: []runtime.Object{vap("p", v("false")), vapBinding("p", admissionv1.Audit)}, asks: "p refuses or warns"},
		{name: "oldObject", objs: []runtime.Object{vap("p", v("oldObject.metadata.labels['helm.sh/chart'] == 'app-1.0.0' && object.data == oldObject.data")), vapBinding("p")}},
		{name: "request as the dry-run sends it", objs: []runtime.Object{vap("p", v(
			"request.operation == 'UPDATE' && request.dryRun && request.options.fieldManager == 'helm' && request.name == 'settings' && request.namespace == 'team' && request.kind.kind == 'ConfigMap'")), vapBinding("p")}},
		{name: "userInfo", objs: []runtime.Object{vap("p", v("request.userInfo.username == 'alice' && 'devs' in request.userInfo.groups")), vapBinding("p")}},
		{name: "userInfo denies", objs: []runtime.Object{vap("p", v("request.userInfo.username != 'alice'")), vapBinding("p")}, asks: "refuses"},
		{name: "namespaceObject", objs: []runtime.Object{vap("p", v("namespaceObject.metadata.labels.tier == 'gold'")), vapBinding("p")}},
		{name: "namespace unreadable", forbid: "namespaces", objs: []runtime.Object{vap("p", v("true")), vapBinding("p")}, asks: "namespace team unreadable"},
		{name: "variables and has()", objs: []runtime.Object{func() runtime.Object {
			p := vap("p", v("has(object.metadata.annotations) && !has(object.metadata.finalizers) && variables.chart.endsWith('2.0.0')"))
			p.Spec.Variables = []admissionv1.Variable{{Name: "chart", Expression: "object.metadata.labels['helm.sh/chart']"}}
			return p
		}(), vapBinding("p")}},
		{name: "match condition excludes it", objs: []runtime.Object{func() runtime.Object {
			p := vap("p", v("false"))
			p.Spec.MatchConditions = []admissionv1.MatchCondition{{Name: "secrets", Expression: "object.kind == 'Secret'"}}
			return p
		}(), vapBinding("p")}},
		{name: "match condition includes it", objs: []runtime.Object{func() runtime.Object {
			p := vap("p", v("false"))
			p.Spec.MatchConditions = []admissionv1.MatchCondition{{Name: "cms", Expression: "object.kind == 'ConfigMap'"}}
			return p
		}(), vapBinding("p")}, asks: "refuses"},
		{name: "object selector excludes it", objs: []runtime.Object{func() runtime.Object {
			p := vap("p", v("false"))
			p.Spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"guarded": "yes"}}
			return p
		}(), vapBinding("p")}},
		{name: "namespace selector excludes it", objs: []runtime.Object{func() runtime.Object {
			p := vap("p", v("false"))
			p.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "bronze"}}
			return p
		}(), vapBinding("p")}},
		{name: "binding's namespace selector includes it", objs: []runtime.Object{vap("p", v("false")), func() runtime.Object {
			b := vapBinding("p")
			b.Spec.MatchResources = &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}},
				ObjectSelector: &metav1.LabelSelector{}}
			return b
		}()}, asks: "refuses"},
		{name: "excluded resource", objs: []runtime.Object{func() runtime.Object {
			p := vap("p", v("false"))
			p.Spec.MatchConstraints.ExcludeResourceRules = p.Spec.MatchConstraints.ResourceRules
			return p
		}(), vapBinding("p")}},
		{name: "params", objs: []runtime.Object{params, withParams(vap("p", v("object.metadata.labels['helm.sh/chart'] == params.data.chart"))), paramRef(vapBinding("p"), "limits")}},
		{name: "params deny", objs: []runtime.Object{params, withParams(vap("p", v("object.metadata.labels['helm.sh/chart'] != params.data.chart"))), paramRef(vapBinding("p"), "limits")}, asks: "refuses"},
		{name: "params missing", objs: []runtime.Object{withParams(vap("p", v("true"))), paramRef(vapBinding("p"), "limits")}, asks: "refuses"},
		{name: "params unreadable", forbid: "configmaps", objs: []runtime.Object{withParams(vap("p", v("true"))),
			func() runtime.Object {
				b := paramRef(vapBinding("p"), "limits")
				b.Spec.ParamRef.ParameterNotFoundAction = ptr.To(admissionv1.AllowAction)
				return b
			}()}, asks: "params configmaps unreadable"},
		{name: "asks the authorizer", objs: []runtime.Object{vap("p", v("authorizer.group('').resource('configmaps').namespace('team').check('patch').allowed()")), vapBinding("p")},
			asks: "authorizer"},
		{name: "an error, even ignored", objs: []runtime.Object{func() runtime.Object {
			p := vap("p", v("object.metadata.annotations['x'] == 'y'"))
			p.Spec.FailurePolicy = ptr.To(admissionv1.Ignore)
			return p
		}(), vapBinding("p")}, asks: "errs"},
		{name: "over the cost limit", objs: []runtime.Object{vap("p", v("["+big+"].all(a, ["+big+"].all(b, ["+big+"].all(c, true)))")), vapBinding("p")}, asks: "errs"},
		{name: "reads managedFields", objs: []runtime.Object{vap("p", v("!has(object.metadata.managedFields) || true")), vapBinding("p")}, asks: "reads managedFields"},
		// The guard's UPDATE rules' shape (pkg/guard, issue 55): the ack
		// annotation only from allowlisted field managers, Helm's
		// release annotation never stripped.
		{name: "guard-like, admits", objs: []runtime.Object{guardLike(), vapBinding("guard")}},
		{name: "guard-like, another field manager acks", manager: "kubectl-annotate", objs: []runtime.Object{guardLike(), vapBinding("guard")}, ack: true, asks: "refuses"},
		{name: "guard-like, helm acks", objs: []runtime.Object{guardLike(), vapBinding("guard")}, ack: true},
		{name: "guard-like, release annotation stripped", objs: []runtime.Object{guardLike(), vapBinding("guard")}, strip: true, asks: "refuses"},
		{name: "enumerates the metadata", objs: []runtime.Object{vap("p", v("object.metadata.all(k, k != 'x')")), vapBinding("p")}, asks: "reads metadata.all"},
		{name: "an older server", server: "v1.36.4", objs: []runtime.Object{vap("p", v("object.metadata.labels['helm.sh/chart'].startsWith('app-')")), vapBinding("p")}},
		{name: "a library the server has", server: "v1.33.1", objs: []runtime.Object{vap("p", v("isSemver('1.0.0')")), vapBinding("p")}},
		{name: "a library newer than the server", server: "v1.32.9", objs: []runtime.Object{vap("p", v("isSemver('1.0.0')")), vapBinding("p")}, asks: "errs"},
		{name: "a newer server", server: "v1.38.0", objs: []runtime.Object{vap("p", v("true")), vapBinding("p")}, asks: "does not know"},
		{name: "a server before policies were GA", server: "v1.29.0", objs: []runtime.Object{vap("p", v("true")), vapBinding("p")}, asks: "does not know"},
		{name: "bindings unreadable", forbid: "validatingadmissionpolicybindings", objs: []runtime.Object{vap("p", v("true")), vapBinding("p")}, asks: "admission configuration unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The server reads the request's namespace for every policy
			// that sees it (namespaceObject).
			c, _ := policyCluster(t, tc.forbid, append([]runtime.Object{ns}, tc.objs...)...)
			o := NewObservers(c)
			server := tc.server
			if server == "" {
				server = "v1.37.2"
			}
			manager := tc.manager
			if manager == "" {
				manager = "helm"
			}
			req := PolicyRequest{GVR: configMaps, Object: next.DeepCopy(), Old: old.DeepCopy(), FieldManager: manager, ServerVersion: server}
			for _, o := range []*unstructured.Unstructured{req.Object, req.Old} {
				o.SetAnnotations(map[string]string{"meta.helm.sh/release-name": "app"})
			}
			if tc.ack {
				req.Object.SetAnnotations(map[string]string{"meta.helm.sh/release-name": "app", "safe-upgrade.io/ack-delete": "uid"})
			}
			if tc.strip {
				req.Object.SetAnnotations(nil)
			}
			got := o.PoliciesAdmit(context.Background(), req)
			if (got == "") != (tc.asks == "") || !strings.Contains(got, tc.asks) {
				t.Errorf("PoliciesAdmit = %q, want %q", got, tc.asks)
			}
		})
	}
}

// guardLike is a policy shaped as the guard's UPDATE rules: variables,
// has(), map lookups, request.options.fieldManager, namespaceObject.
func guardLike() *admissionv1.ValidatingAdmissionPolicy {
	p := vap("guard",
		admissionv1.Validation{Expression: "!variables.acks || variables.manager in ['helm', 'helm-safe-upgrade']",
			MessageExpression: "'ack by ' + variables.manager + ' refused'"},
		admissionv1.Validation{Expression: "!variables.released || (has(object.metadata.annotations) && 'meta.helm.sh/release-name' in object.metadata.annotations)",
			Message: "Helm's release annotation may not be stripped"},
		admissionv1.Validation{Expression: "namespaceObject.metadata.name == object.metadata.namespace"},
	)
	p.Spec.Variables = []admissionv1.Variable{
		{Name: "manager", Expression: "has(request.options.fieldManager) ? request.options.fieldManager : ''"},
		{Name: "acks", Expression: "has(object.metadata.annotations) && 'safe-upgrade.io/ack-delete' in object.metadata.annotations && " +
			"(!has(oldObject.metadata.annotations) || !('safe-upgrade.io/ack-delete' in oldObject.metadata.annotations))"},
		{Name: "released", Expression: "has(oldObject.metadata.annotations) && 'meta.helm.sh/release-name' in oldObject.metadata.annotations"},
	}
	return p
}

// TestPoliciesAdmitReadsOnce: the configuration, the user and a namespace
// are read once per run, and a request no bound policy's rules match reads
// neither the user nor the namespace.
func TestPoliciesAdmitReadsOnce(t *testing.T) {
	unbound, udyn := policyCluster(t, "", vap("p", admissionv1.Validation{Expression: "false"}))
	cm := configMap("team", "settings", nil, nil)
	if got := NewObservers(unbound).PoliciesAdmit(context.Background(), PolicyRequest{GVR: configMaps, Object: cm, Old: cm, ServerVersion: "v1.37.2"}); got != "" {
		t.Errorf("an unbound policy: %q", got)
	}
	if n := len(udyn.Actions()); n != 2 {
		t.Errorf("%d requests for an unbound policy: want the 2 LISTs", n)
	}

	ns := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]interface{}{"name": "team"}}}
	c, dyn := policyCluster(t, "", ns, vap("p", admissionv1.Validation{Expression: "namespaceObject.metadata.name == 'team'"}), vapBinding("p"))
	o := NewObservers(c)
	next := configMap("team", "settings", nil, nil)
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	if got := o.PoliciesAdmit(context.Background(), PolicyRequest{GVR: deployments, Object: next, Old: next, ServerVersion: "v1.37.2"}); got != "" {
		t.Fatalf("no policy sees deployments: %q", got)
	}
	if n := len(dyn.Actions()); n != 2 {
		t.Errorf("%d requests for a request no policy sees: want the 2 LISTs", n)
	}
	for range 3 {
		if got := o.PoliciesAdmit(context.Background(), PolicyRequest{GVR: configMaps, Object: next, Old: next, ServerVersion: "v1.37.2"}); got != "" {
			t.Fatalf("PoliciesAdmit = %q", got)
		}
	}
	var verbs []string
	for _, a := range dyn.Actions() {
		verbs = append(verbs, a.GetVerb()+" "+a.GetResource().Resource)
	}
	if want := "list validatingadmissionpolicies,list validatingadmissionpolicybindings,create selfsubjectreviews,get namespaces"; strings.Join(verbs, ",") != want {
		t.Errorf("requests %s\nwant     %s", strings.Join(verbs, ","), want)
	}
}
