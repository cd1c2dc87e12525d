package e2e

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// denySecretChanges installs a ValidatingAdmissionPolicy, bound to ns only,
// that refuses any change of a Secret's data.pw and echoes the new and old
// values (base64) in its message, as GUIDE §6a saw one do. With dryRunOnly
// false, it refuses only real writes (dry-runs pass), so the echo happens
// at apply.
func denySecretChanges(t *testing.T, c *testcluster.Cluster, ns string, dryRunToo bool) {
	t.Helper()
	expr := "!has(oldObject.data) || !has(object.data) || !('pw' in object.data) || !('pw' in oldObject.data) || object.data.pw == oldObject.data.pw"
	if !dryRunToo {
		expr = "request.dryRun == true || " + expr
	}
	fail := admissionv1.Fail
	bindPolicy(t, c, ns, &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-pw-" + ns},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression:        expr,
				MessageExpression: "'bad password: ' + string(object.data.pw) + ' old=' + string(oldObject.data.pw)",
			}},
		},
	})
	// Policies take effect once the API server's informer has them: wait
	// until a change of a probe Secret is refused.
	core := c.Clientset(t).CoreV1().Secrets(ns)
	probe := func(i int) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "probe"}, StringData: map[string]string{"pw": fmt.Sprint("probe-", i)}}
	}
	if _, err := core.Create(t.Context(), probe(0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	opts := metav1.UpdateOptions{}
	if dryRunToo {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	i := 0
	waitFor(t, "the admission policy to refuse a change", func() bool {
		i++
		_, err := core.Update(t.Context(), probe(i), opts)
		return err != nil && strings.Contains(err.Error(), "bad password")
	})
}

// secretCanaries returns the forms of each value that must never appear in
// any output: the value and its base64 (padded and raw).
func secretCanaries(values ...string) []string {
	var out []string
	for _, v := range values {
		out = append(out, v, base64.StdEncoding.EncodeToString([]byte(v)), base64.RawStdEncoding.EncodeToString([]byte(v)))
	}
	return out
}

// noCanary fails the test for every canary found in text.
func noCanary(t *testing.T, what, text string, canaries []string) {
	t.Helper()
	for _, c := range canaries {
		if strings.Contains(text, c) {
			t.Errorf("%s holds the secret %q:\n%s", what, c, text)
		}
	}
}

// TestNoSecretLeavesWhateverTheShape (issue 10) builds a release holding
// Secrets in every shape (a List holding a Secret, then `kind: secret`, a
// last-applied-configuration annotation, and an admission policy that
// echoes Secret data in its denial) and looks for each value, plain and
// base64, in every output format, stderr and the --debug log: none may
// appear. The release holds a List from its first revision: it upgrades,
// and the List's items are planned as separate objects.
func TestNoSecretLeavesWhateverTheShape(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	const (
		oldPW, newPW     = "old-password-canary-1", "new-password-canary-2"
		listOld, listNew = "list-item-canary-old", "list-item-canary-new"
		lowerCase        = "lower-case-kind-canary"
		lastApplied      = "last-applied-canary"
	)
	b64 := func(v string) string { return base64.StdEncoding.EncodeToString([]byte(v)) }
	chart := func(version, pw, listed string, extra map[string]string) string {
		templates := map[string]string{
			"creds.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\ndata:\n  pw: " + b64(pw) + "\n",
			"list.yaml": "apiVersion: v1\nkind: List\nitems:\n" +
				"- apiVersion: v1\n  kind: Secret\n  metadata: {name: listed}\n  stringData: {token: " + listed + "}\n" +
				"- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: listed-settings}\n  data: {mode: " + version + "}\n",
		}
		for k, v := range extra {
			templates[k] = v
		}
		return writeChart(t, "app", version, templates)
	}
	c.Helm(t, "install", "app", chart("1.0.0", oldPW, listOld, nil), "-n", ns)
	denySecretChanges(t, c, ns, true)
	v2 := chart("2.0.0", newPW, listNew, map[string]string{
		"lower.yaml": "apiVersion: v1\nkind: secret\nmetadata: {name: lower}\nstringData: {token: " + lowerCase + "}\n",
		"annotated.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: annotated\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: " +
			"'{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"stringData\":{\"pw\":\"" + lastApplied + "\"}}'\ndata: {a: b}\n",
	})
	canaries := secretCanaries(oldPW, newPW, listOld, listNew, lowerCase, lastApplied)

	p, r := planJSON(t, c, "app", v2, "-n", ns)
	noCanary(t, "the JSON plan", r.Stdout, canaries)
	noCanary(t, "stderr (json)", r.Stderr, canaries)
	// The List's items are planned one by one; the denial is reported.
	p.change(t, "ConfigMap", "listed-settings")
	if got := p.change(t, "Secret", "listed"); got.Action != "update" {
		t.Errorf("Secret/listed from the List: action %s, want update", got.Action)
	}
	creds := p.change(t, "Secret", "creds")
	if creds.Class != "invalid" || !strings.Contains(fmt.Sprint(creds.Reasons), "bad password: (sensitive") {
		t.Errorf("Secret/creds: class %s, reasons %+v: want the policy's denial, masked", creds.Class, creds.Reasons)
	}
	for _, args := range [][]string{
		{"-o", "text"}, {"-o", "markdown"}, {"-o", "text", "--debug"},
	} {
		r := run(t, c, append([]string{"app", v2, "-n", ns, "--dry-run"}, args...)...)
		if r.Code == 1 {
			t.Fatalf("%v: exit 1\n%s", args, r.Stderr)
		}
		noCanary(t, fmt.Sprintf("stdout %v", args), r.Stdout, canaries)
		noCanary(t, fmt.Sprintf("stderr %v", args), r.Stderr, canaries)
	}
}

// TestNoSecretInHelmHistory (issue 10): an admission policy that refuses
// only real writes lets the plan pass and echoes Secret data when the
// upgrade is applied; the value reaches neither stderr nor the failed
// revision's description in `helm history`.
func TestNoSecretInHelmHistory(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	const oldPW, newPW = "history-old-canary-1", "history-new-canary-2"
	chart := func(version, pw string) string {
		return writeChart(t, "app", version, map[string]string{
			"creds.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {pw: " + pw + "}\n",
		})
	}
	c.Helm(t, "install", "app", chart("1.0.0", oldPW), "-n", ns)
	denySecretChanges(t, c, ns, false)
	r := run(t, c, "app", chart("2.0.0", newPW), "-n", ns, "--debug")
	if r.Code != 1 || !strings.Contains(r.Stderr, "bad password: (sensitive") {
		t.Fatalf("want exit 1 with the policy's denial masked, got %d\n%s", r.Code, r.Stderr)
	}
	canaries := secretCanaries(oldPW, newPW)
	noCanary(t, "stdout", r.Stdout, canaries)
	noCanary(t, "stderr", r.Stderr, canaries)
	history := c.Helm(t, "history", "app", "-n", ns, "-o", "json")
	if !strings.Contains(history, "failed") {
		t.Fatalf("no failed revision in the history:\n%s", history)
	}
	noCanary(t, "helm history", history, canaries)
}

// TestReleaseWithListUpgrades (issue 10): a release whose manifest holds a
// kind: List (installed by helm) is upgraded by the tool; the List's items
// are applied as separate objects, the Secret among them with the new
// value, and an item dropped from the List is deleted.
func TestReleaseWithListUpgrades(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	chart := func(version, token string, items ...string) string {
		list := "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: listed}\n  stringData: {token: " + token + "}\n"
		for _, name := range items {
			list += "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: " + name + "}\n  data: {v: \"" + version + "\"}\n"
		}
		return writeChart(t, "app", version, map[string]string{"list.yaml": list})
	}
	c.Helm(t, "install", "app", chart("1.0.0", "list-token-old", "kept", "dropped"), "-n", ns)
	r := run(t, c, "app", chart("2.0.0", "list-token-new", "kept"), "-n", ns)
	if r.Code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	noCanary(t, "the report", r.Stdout+r.Stderr, secretCanaries("list-token-old", "list-token-new"))
	core := c.Clientset(t).CoreV1()
	s, err := core.Secrets(ns).Get(t.Context(), "listed", metav1.GetOptions{})
	if err != nil || string(s.Data["token"]) != "list-token-new" {
		t.Fatalf("Secret/listed after the upgrade: %v, %q", err, s.Data["token"])
	}
	if cm, err := core.ConfigMaps(ns).Get(t.Context(), "kept", metav1.GetOptions{}); err != nil || cm.Data["v"] != "2.0.0" {
		t.Fatalf("ConfigMap/kept after the upgrade: %v, %v", err, cm.Data)
	}
	if _, err := core.ConfigMaps(ns).Get(t.Context(), "dropped", metav1.GetOptions{}); err == nil {
		t.Fatal("ConfigMap/dropped is still there")
	}
}

// TestRenderErrorsKeepSecrets (issue 10): a chart template whose `fail`
// echoes a value the release keeps in a Secret, or a Secret it read with
// lookup, exits 1 saying why; neither value, plain or base64, reaches any
// report format, stderr or the --debug log.
func TestRenderErrorsKeepSecrets(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	const kept, external = "kept-in-release-canary-1", "looked-up-canary-2"
	creds := "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {pw: {{ .Values.pw | quote }}}\n"
	c.Helm(t, "install", "app", writeChart(t, "app", "1.0.0", map[string]string{"creds.yaml": creds}), "-n", ns, "--set", "pw="+kept)
	if _, err := c.Clientset(t).CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "external"},
		StringData: map[string]string{"token": external}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, template, says string
	}{
		{"fail with a value of the release's Secret", `{{ fail (printf "bad password: %s" .Values.pw) }}`, "bad password: "},
		{"fail with a looked-up Secret", `{{ $s := lookup "v1" "Secret" .Release.Namespace "external" }}{{ fail (printf "found: %v %s" $s.data ($s.data.token | b64dec)) }}`, "found: "},
	}
	canaries := secretCanaries(kept, external)
	for _, tt := range tests {
		v2 := writeChart(t, "app", "2.0.0", map[string]string{"creds.yaml": creds, "fail.yaml": tt.template})
		for _, args := range [][]string{{"-o", "text"}, {"-o", "json"}, {"-o", "markdown"}, {"-o", "sarif"}, {"-o", "text", "--debug"}} {
			r := run(t, c, append([]string{"app", v2, "-n", ns, "--reuse-values", "--dry-run"}, args...)...)
			if r.Code != 1 || !strings.Contains(r.Stderr, tt.says) {
				t.Fatalf("%s %v: want exit 1 saying %q, got %d\n%s", tt.name, args, tt.says, r.Code, r.Stderr)
			}
			noCanary(t, fmt.Sprintf("%s: stdout %v", tt.name, args), r.Stdout, canaries)
			noCanary(t, fmt.Sprintf("%s: stderr %v", tt.name, args), r.Stderr, canaries)
		}
	}
}

// TestSecretValueCopiedElsewhere (issue 25): a value of one of the
// release's Secrets that the chart also writes into a ConfigMap (a
// connection URL), a hook Job's env and command, and NOTES.txt is masked
// in every output format, on stderr, in the NOTES printed after the apply
// and in the release description; the plan warns about each place it is
// copied to.
func TestSecretValueCopiedElsewhere(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	const oldPW, newPW = "copied-old-canary-1", "copied-new-canary-2"
	chart := func(version, pw string) string {
		return writeChart(t, "copier", version, map[string]string{
			"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: " + pw + "}\n",
			"cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: url}\ndata: {url: 'postgres://app:" + pw + "@db:5432/app'}\n",
			"hook.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations: {helm.sh/hook: pre-upgrade}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n" +
				"      containers: [{name: m, image: migrate, command: [sh, -c, 'migrate --password " + pw + "'], env: [{name: PW, value: " + pw + "}]}]\n",
			"NOTES.txt": "Log in with password {{ \"" + pw + "\" }}\n",
		})
	}
	c.Helm(t, "install", "copier", chart("1.0.0", oldPW), "-n", ns)
	canaries := secretCanaries(oldPW, newPW)
	v2 := chart("2.0.0", newPW)
	copies := []string{
		"ConfigMap/" + ns + "/url holds a value of one of the release's Secrets in data.url",
		"hook Job/migrate holds a value of one of the release's Secrets in spec.template.spec.containers[0].command[2], spec.template.spec.containers[0].env[0].value",
	}
	for _, format := range []string{"text", "json", "markdown"} {
		r := run(t, c, "copier", v2, "-n", ns, "--dry-run", "-o", format)
		if r.Code == 1 {
			t.Fatalf("-o %s: exit 1\n%s", format, r.Stderr)
		}
		noCanary(t, "-o "+format+" report", r.Stdout, canaries)
		noCanary(t, "-o "+format+" stderr", r.Stderr, canaries)
		for _, want := range copies {
			if !strings.Contains(r.Stderr, "warning: "+want) {
				t.Errorf("-o %s: no warning %q:\n%s", format, want, r.Stderr)
			}
		}
	}
	// The hook Job never completes here (no kubelet): the apply skips it.
	r := run(t, c, "copier", v2, "-n", ns, "--no-hooks")
	if r.Code != 0 || !strings.Contains(r.Stderr, "NOTES:\nLog in with password (sensitive") {
		t.Fatalf("apply: exit %d, want 0 and the NOTES with the password masked\n%s", r.Code, r.Stderr)
	}
	noCanary(t, "apply stdout", r.Stdout, canaries)
	noCanary(t, "apply stderr", r.Stderr, canaries)
	noCanary(t, "helm history", c.Helm(t, "history", "copier", "-n", ns, "-o", "json"), canaries)
}
