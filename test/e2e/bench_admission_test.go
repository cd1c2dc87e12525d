package e2e

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// BenchmarkAdmission measures the chart bump of a 1000-object release (a
// label changed on every object) in the admission configurations a
// production cluster has: none (bare), one ValidatingAdmissionPolicy
// matching every UPDATE and admitting it (policy), the project's own guard
// (guard), and a validating webhook matching every UPDATE (webhook: a
// loopback HTTPS server in this process that admits everything). In each,
// the tool's plan (dry-run requests of one more run) and the floor (helm
// template + one LIST) are timed in turns, and BENCH_BASELINE's plan when
// set. The configuration is bound to the release's namespace only.
func BenchmarkAdmission(b *testing.B) {
	runs := benchRuns(b)
	c := testcluster.Get(b)
	c.RequireOwnCluster(b) // cluster-wide admission configuration
	env := c.Env()
	chart := writeBenchChart(b)
	tool := benchTool(b, c)
	ns := c.Namespace(b)
	_, err := execMeasured(env, c.Helm3, "install", "bench", chart, "-n", ns, "--timeout", "15m", "--set", "objects=1000")
	must(b, err)
	set := "objects=1000,changed=0,label=2"
	plan := []string{"-n", ns, "bench", chart, "--set", set, "--dry-run", "-o", "json"}
	shapes := []struct {
		name    string
		install func(b *testing.B) (remove func())
	}{
		{name: "bare", install: func(*testing.B) func() { return func() {} }},
		{name: "policy", install: func(b *testing.B) func() { return benchPolicy(b, c, ns) }},
		{name: "guard", install: func(b *testing.B) func() {
			_, err := execMeasured(env, tool, "guard", "install")
			must(b, err)
			return func() { _, _ = execMeasured(env, tool, "guard", "uninstall") }
		}},
		{name: "webhook", install: func(b *testing.B) func() { return benchWebhook(b, c, ns) }},
	}
	for _, shape := range shapes {
		b.Run("1000-objects-bump/"+shape.name, func(b *testing.B) {
			remove := shape.install(b)
			defer remove()
			contenders := []contender{
				{name: "tool", run: func() (sample, error) { return execMeasured(env, tool, plan...) },
					after: func(b *testing.B) { reportDryRuns(b, env, tool, plan...) }},
				{name: "floor", run: func() (sample, error) {
					render, err := execMeasured(env, c.Helm3, "template", "bench", chart, "-n", ns, "--set", set)
					if err != nil {
						return sample{}, err
					}
					list, err := execMeasured(env, c.Kubectl, "get", "configmaps,secrets,services,deployments.apps", "-n", ns, "-o", "json")
					return render.then(list), err
				}},
			}
			if base := os.Getenv(BenchBaselineEnv); base != "" {
				contenders = append(contenders, contender{name: "baseline", run: func() (sample, error) { return execMeasured(env, base, plan...) },
					after: func(b *testing.B) { reportDryRuns(b, env, base, plan...) }})
			}
			benchInterleaved(b, runs, contenders)
		})
	}
}

// benchPolicy installs a ValidatingAdmissionPolicy matching every UPDATE in
// ns that admits the bump, reading what a guard-like policy reads (labels,
// annotations with has(), the request's field manager and user, the
// namespace); it returns its removal.
func benchPolicy(b *testing.B, c *testcluster.Cluster, ns string) func() {
	adm := c.Clientset(b).AdmissionregistrationV1()
	name := "bench-policy-" + ns
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule: admissionv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}}}}},
			Variables: []admissionv1.Variable{{Name: "acked", Expression: "has(object.metadata.annotations) && 'example.com/ack' in object.metadata.annotations"}},
			Validations: []admissionv1.Validation{{
				Expression:        "!variables.acked || request.options.fieldManager == 'admin'",
				MessageExpression: "'only admin may acknowledge ' + object.metadata.name + ', not ' + request.userInfo.username",
			}, {
				Expression: "namespaceObject.metadata.name == object.metadata.namespace && (!has(oldObject.metadata.labels) || has(object.metadata.labels))",
				Message:    "labels may not be stripped",
			}},
		},
	}
	_, err := adm.ValidatingAdmissionPolicies().Create(b.Context(), policy, metav1.CreateOptions{})
	must(b, err)
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}}},
	}
	_, err = adm.ValidatingAdmissionPolicyBindings().Create(b.Context(), binding, metav1.CreateOptions{})
	must(b, err)
	return func() {
		ctx := context.Background()
		_ = adm.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = adm.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
	}
}

// benchWebhook starts a loopback HTTPS admission webhook that admits every
// request and registers it for every UPDATE in ns (sideEffects None, so
// dry-runs reach it); it returns once the API server calls it, and returns
// its removal.
func benchWebhook(b *testing.B, c *testcluster.Cluster, ns string) func() {
	var calls atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var review struct {
			Request struct {
				UID types.UID `json:"uid"`
			} `json:"request"`
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
		if err := json.Unmarshal(body, &review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":%q,"allowed":true}}`, review.Request.UID)
	}))
	adm := c.Clientset(b).AdmissionregistrationV1()
	name := "bench-webhook-" + ns
	url := srv.URL + "/validate"
	config := &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name:                    "bench.example.com",
			ClientConfig:            admissionv1.WebhookClientConfig{URL: &url, CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})},
			Rules:                   []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Update}, Rule: admissionv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			SideEffects:             ptr.To(admissionv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			FailurePolicy:           ptr.To(admissionv1.Fail),
		}},
	}
	_, err := adm.ValidatingWebhookConfigurations().Create(b.Context(), config, metav1.CreateOptions{})
	must(b, err)
	// The API server calls a webhook once its informer has it.
	cms := c.Clientset(b).CoreV1().ConfigMaps(ns)
	patch := []byte(`{"metadata":{"labels":{"bench-probe":"1"}}}`)
	testcluster.Eventually(b, "the API server to call the webhook", func() (bool, string) {
		_, err := cms.Patch(b.Context(), "cm-0", types.StrategicMergePatchType, patch, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && calls.Load() > 0, fmt.Sprint(err)
	})
	return func() {
		_ = adm.ValidatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
		srv.Close()
		b.Logf("webhook calls: %d", calls.Load())
	}
}
