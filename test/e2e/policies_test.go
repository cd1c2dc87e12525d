package e2e

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// bumpedGVRs are the resources of bumpChart's objects, by resource name.
var bumpedGVRs = map[string]schema.GroupVersionResource{
	"configmaps":  {Version: "v1", Resource: "configmaps"},
	"secrets":     {Version: "v1", Resource: "secrets"},
	"services":    {Version: "v1", Resource: "services"},
	"deployments": {Group: "apps", Version: "v1", Resource: "deployments"},
}

// bumpRules match an UPDATE of each of bumpChart's objects.
var bumpRules = []admissionv1.NamedRuleWithOperations{
	{RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{admissionv1.Update},
		Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps", "secrets", "services"}}}},
	{RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{admissionv1.Update},
		Rule: admissionv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}}}},
}

// policyCase is a ValidatingAdmissionPolicy seeing a chart bump's updates,
// and the resources whose update it refuses, warns about or leaves to the
// server.
type policyCase struct {
	name string
	// policy's spec (match constraints: bumpRules when unset); binding
	// changes the binding (actions: Deny; bound to the test's namespace).
	policy  func(user string) admissionv1.ValidatingAdmissionPolicySpec
	binding func(b *admissionv1.ValidatingAdmissionPolicyBinding)
	// setup runs before the policy is created (params, namespace labels).
	setup func(t *testing.T, c *testcluster.Cluster, ns string)
	// asked are the resources the default plan sends a dry-run for.
	asked []string
	// warns: the asked updates are warned about, not refused.
	warns bool
	helm4 bool
}

func validation(expr, msgExpr string) []admissionv1.Validation {
	return []admissionv1.Validation{{Expression: expr, MessageExpression: msgExpr}}
}

// policyCases: what a policy may read (object, oldObject, request with
// userInfo and options, params, namespaceObject, variables, match
// conditions) and what it may answer (admit, deny, warn, err).
var policyCases = []policyCase{
	{name: "admits", policy: func(user string) admissionv1.ValidatingAdmissionPolicySpec {
		return admissionv1.ValidatingAdmissionPolicySpec{
			Variables: []admissionv1.Variable{{Name: "chart", Expression: "has(object.metadata.labels) && 'helm.sh/chart' in object.metadata.labels ? object.metadata.labels['helm.sh/chart'] : ''"}},
			Validations: validation("variables.chart.startsWith('app-') && oldObject.metadata.labels['helm.sh/chart'] == 'app-1.0.0' && "+
				"request.operation == 'UPDATE' && request.dryRun && request.options.fieldManager == 'helm' && "+
				"request.userInfo.username == '"+user+"' && 'system:authenticated' in request.userInfo.groups && "+
				"namespaceObject.metadata.name == object.metadata.namespace", ""),
		}
	}},
	{name: "admits a Helm 4 apply", helm4: true, policy: func(user string) admissionv1.ValidatingAdmissionPolicySpec {
		return admissionv1.ValidatingAdmissionPolicySpec{
			Validations: validation("object.metadata.labels['helm.sh/chart'] == 'app-2.0.0' && request.options.fieldManager == 'helm' && request.userInfo.username == '"+user+"'", ""),
		}
	}},
	{name: "denies with messageExpression", asked: []string{"configmaps"}, policy: func(string) admissionv1.ValidatingAdmissionPolicySpec {
		return admissionv1.ValidatingAdmissionPolicySpec{Validations: validation(
			"object.kind != 'ConfigMap' || object.metadata.labels['helm.sh/chart'] != 'app-2.0.0'",
			"'chart ' + object.metadata.labels['helm.sh/chart'] + ' is not allowed for ' + object.metadata.name")}
	}},
	{name: "denies a Helm 4 apply", helm4: true, asked: []string{"configmaps"}, policy: func(string) admissionv1.ValidatingAdmissionPolicySpec {
		return admissionv1.ValidatingAdmissionPolicySpec{Validations: validation(
			"object.kind != 'ConfigMap' || request.options.fieldManager != 'helm'",
			"'field manager ' + request.options.fieldManager + ' may not apply ' + object.metadata.name")}
	}},
	{name: "warns", asked: []string{"services"}, warns: true, policy: func(string) admissionv1.ValidatingAdmissionPolicySpec {
		return admissionv1.ValidatingAdmissionPolicySpec{Validations: []admissionv1.Validation{{Expression: "object.kind != 'Service'", Message: "services are frozen"}}}
	}, binding: func(b *admissionv1.ValidatingAdmissionPolicyBinding) {
		b.Spec.ValidationActions = []admissionv1.ValidationAction{admissionv1.Warn}
	}},
	{name: "params", asked: []string{"secrets"}, setup: func(t *testing.T, c *testcluster.Cluster, ns string) {
		_, err := c.Clientset(t).CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "policy-params"}, Data: map[string]string{"frozen": "Secret"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}, policy: func(string) admissionv1.ValidatingAdmissionPolicySpec {
		return admissionv1.ValidatingAdmissionPolicySpec{
			ParamKind:   &admissionv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			Validations: validation("object.kind != params.data.frozen", "params.data.frozen + 's are frozen here'"),
		}
	}, binding: func(b *admissionv1.ValidatingAdmissionPolicyBinding) {
		b.Spec.ParamRef = &admissionv1.ParamRef{Name: "policy-params", ParameterNotFoundAction: ptr.To(admissionv1.DenyAction)}
	}},
	{name: "namespaceObject", asked: []string{"deployments"}, setup: func(t *testing.T, c *testcluster.Cluster, ns string) {
		patch := []byte(`{"metadata":{"labels":{"tier":"frozen"}}}`)
		if _, err := c.Clientset(t).CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}, policy: func(string) admissionv1.ValidatingAdmissionPolicySpec {
		return admissionv1.ValidatingAdmissionPolicySpec{Validations: validation(
			"object.kind != 'Deployment' || namespaceObject.metadata.labels['tier'] != 'frozen'",
			"'namespace ' + namespaceObject.metadata.name + ' is frozen for deployments'")}
	}},
	{name: "match conditions", asked: []string{"services"}, policy: func(string) admissionv1.ValidatingAdmissionPolicySpec {
		return admissionv1.ValidatingAdmissionPolicySpec{
			MatchConditions: []admissionv1.MatchCondition{{Name: "services-only", Expression: "object.kind == 'Service'"}},
			Validations:     []admissionv1.Validation{{Expression: "false", Message: "no service changes"}},
		}
	}},
	{name: "request.userInfo", asked: []string{"secrets"}, policy: func(user string) admissionv1.ValidatingAdmissionPolicySpec {
		return admissionv1.ValidatingAdmissionPolicySpec{Validations: validation(
			"object.kind != 'Secret' || request.userInfo.username != '"+user+"'",
			"'user ' + request.userInfo.username + ' may not change secrets'")}
	}},
	{name: "over the cost limit", asked: []string{"configmaps"}, policy: func(string) admissionv1.ValidatingAdmissionPolicySpec {
		l := "[" + strings.TrimSuffix(strings.Repeat("0,", 120), ",") + "]"
		return admissionv1.ValidatingAdmissionPolicySpec{
			MatchConditions: []admissionv1.MatchCondition{{Name: "configmaps-only", Expression: "object.kind == 'ConfigMap'"}},
			Validations:     validation(l+".all(a, "+l+".all(b, "+l+".all(c, true)))", ""),
		}
	}},
}

// TestPolicyVerdictsWithEveryDryRun (issue 55): with a ValidatingAdmissionPolicy
// seeing every update of a chart bump, the default plan evaluates it as the
// server does, derives the updates it admits without a warning and asks the
// server about the others; every verdict and warning is the one
// --server-dry-run=all gets, and the audit log shows exactly the asked
// updates sent.
func TestPolicyVerdictsWithEveryDryRun(t *testing.T) {
	c := testcluster.Get(t)
	c.RequireOwnCluster(t) // cluster-wide policies
	review, err := c.Clientset(t).AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	user := review.Status.UserInfo.Username
	for _, tc := range policyCases {
		t.Run(tc.name, func(t *testing.T) {
			ns := c.Namespace(t)
			helm := c.Helm3
			if tc.helm4 {
				helm = c.Helm4
			}
			mustBin(t, c, helm, "install", "app", bumpChart(t, "1.0.0"), "-n", ns)
			if tc.setup != nil {
				tc.setup(t, c, ns)
			}
			spec := tc.policy(user)
			if spec.MatchConstraints == nil {
				spec.MatchConstraints = &admissionv1.MatchResources{ResourceRules: bumpRules}
			}
			spec.FailurePolicy = ptr.To(admissionv1.Fail)
			bindPolicyWith(t, c, ns, &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p55-" + ns}, Spec: spec}, tc.binding)
			for _, res := range tc.asked {
				policyEnforced(t, c, ns, res)
			}

			next := bumpChart(t, "2.0.0")
			before := auditMark(t, c)
			byDefault, r1 := planJSON(t, c, "app", next, "-n", ns, "--debug")
			sent := dryRunPatches(t, c, ns, before)
			assertOnlyDryRunWrites(t, c, ns, before)
			before = auditMark(t, c)
			asked, r2 := planJSON(t, c, "app", next, "-n", ns, "--server-dry-run=all")
			sentAll := dryRunPatches(t, c, ns, before)
			if r1.Code != r2.Code || len(byDefault.Changes) != len(asked.Changes) {
				t.Fatalf("exit %d and %d, %d and %d changes\n%s\n%s", r1.Code, r2.Code, len(byDefault.Changes), len(asked.Changes), r1.Stderr, r2.Stderr)
			}
			want := map[string]int{}
			for _, res := range tc.asked {
				want[res] = 1
			}
			if !maps.Equal(sent, want) {
				t.Errorf("dry-runs sent %v, want %v\n%s", sent, want, r1.Stderr)
			}
			for _, o := range bumped {
				d, a := byDefault.change(t, o.kind, o.name), asked.change(t, o.kind, o.name)
				wantPrediction := "derived"
				if slices.Contains(tc.asked, o.resource) {
					wantPrediction = "server"
					if !tc.warns && d.Class != "invalid" {
						t.Errorf("%s/%s: class %q, want invalid (refused by the policy)", o.kind, o.name, d.Class)
					}
				}
				if d.Prediction != wantPrediction {
					t.Errorf("%s/%s: prediction %q, want %q", o.kind, o.name, d.Prediction, wantPrediction)
				}
				// A masked value's HMAC differs from run to run.
				d.Diff, a.Diff = maskOrdinals(d.Diff), maskOrdinals(a.Diff)
				if !reflect.DeepEqual(verdict(d), verdict(a)) {
					t.Errorf("%s/%s: verdicts differ:\ndefault %+v\nall     %+v", o.kind, o.name, d, a)
				}
				if sentAll[o.resource] != 1 {
					t.Errorf("%s/%s: %d dry-runs with --server-dry-run=all, want 1", o.kind, o.name, sentAll[o.resource])
				}
			}
			w1, w2 := policyLines(r1.Stderr), policyLines(r2.Stderr)
			if tc.warns && len(w2) == 0 {
				t.Errorf("--server-dry-run=all printed no policy warning:\n%s", r2.Stderr)
			}
			if !slices.Equal(w1, w2) {
				t.Errorf("warnings differ:\ndefault %q\nall     %q", w1, w2)
			}
		})
	}
}

// policyLines are the lines of stderr naming a policy, --debug's aside.
func policyLines(stderr string) []string {
	return slices.DeleteFunc(warningLines(stderr, "ValidatingAdmissionPolicy"), func(l string) bool { return strings.HasPrefix(l, "debug:") })
}

// bindPolicyWith creates policy and its binding to ns (Deny, then changed
// by binding when given); both are deleted when the test ends.
func bindPolicyWith(t *testing.T, c *testcluster.Cluster, ns string, policy *admissionv1.ValidatingAdmissionPolicy, binding func(*admissionv1.ValidatingAdmissionPolicyBinding)) {
	t.Helper()
	name := policy.Name
	adm := c.Clientset(t).AdmissionregistrationV1()
	if _, err := adm.ValidatingAdmissionPolicies().Create(t.Context(), policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}},
		},
	}
	if binding != nil {
		binding(b)
	}
	if _, err := adm.ValidatingAdmissionPolicyBindings().Create(t.Context(), b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// t.Context() is already cancelled when cleanups run: with it the
		// cluster-scoped policy outlived the test, and later plans saw it.
		ctx := context.Background()
		if err := adm.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting binding %s: %v", name, err)
		}
		if err := adm.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting policy %s: %v", name, err)
		}
	})
}

// warnings collects the warnings the API server returns.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// policyEnforced waits until the API server's admission has the test's
// policy (its informer lags the create): a dry-run of the chart bump's
// label patch of bumpChart's object of resource in ns is refused or warned
// about.
func policyEnforced(t *testing.T, c *testcluster.Cluster, ns, resource string) {
	t.Helper()
	w := &warnings{}
	cfg := rest.CopyConfig(c.RESTConfig)
	cfg.WarningHandler = w
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	name := ""
	for _, o := range bumped {
		if o.resource == resource {
			name = o.name
		}
	}
	patch := []byte(`{"metadata":{"labels":{"helm.sh/chart":"app-2.0.0"}}}`)
	waitFor(t, "the policy to answer for "+resource, func() bool {
		w.mu.Lock()
		w.list = nil
		w.mu.Unlock()
		_, err := dyn.Resource(bumpedGVRs[resource]).Namespace(ns).Patch(t.Context(), name, types.StrategicMergePatchType, patch,
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "helm"})
		w.mu.Lock()
		defer w.mu.Unlock()
		return err != nil || len(w.list) > 0
	})
}
