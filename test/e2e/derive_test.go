package e2e

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// bumpChart is a chart whose objects carry the chart version in their
// metadata labels only, as helm create's charts do: a version bump changes
// nothing else. Its Secret is written with stringData, which Helm sends
// again on every upgrade.
func bumpChart(t *testing.T, version string) string {
	label := "metadata: {name: %s, labels: {helm.sh/chart: 'app-{{ .Chart.Version }}'}}\n"
	return writeChart(t, "app", version, map[string]string{
		"cm.yaml":     "apiVersion: v1\nkind: ConfigMap\n" + fmt.Sprintf(label, "settings") + "data: {mode: a}\n",
		"secret.yaml": "apiVersion: v1\nkind: Secret\n" + fmt.Sprintf(label, "creds") + "stringData: {pw: s3cret-bump}\n",
		"svc.yaml":    "apiVersion: v1\nkind: Service\n" + fmt.Sprintf(label, "api") + "spec: {selector: {app: api}, ports: [{port: 80}]}\n",
		"d.yaml": "apiVersion: apps/v1\nkind: Deployment\n" + fmt.Sprintf(label, "web") + `spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1.25"}]}
`,
	})
}

var bumped = []struct{ kind, name, resource string }{
	{"ConfigMap", "settings", "configmaps"}, {"Secret", "creds", "secrets"},
	{"Service", "api", "services"}, {"Deployment", "web", "deployments"},
}

// dryRunPatches counts, per resource, the tool's dry-run PATCHes of objects
// in ns since the audit mark before.
func dryRunPatches(t *testing.T, c *testcluster.Cluster, ns string, before int) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, e := range c.AuditEvents(t, nil)[before:] {
		if strings.HasPrefix(e.UserAgent, "helm-safe-upgrade/") && e.Verb == "patch" && e.ObjectRef.Namespace == ns &&
			strings.Contains(e.RequestURI, "dryRun=All") && e.Stage == "ResponseComplete" {
			out[e.ObjectRef.Resource]++
		}
	}
	return out
}

// verdict is what a change says, without how it was established.
func verdict(c jsonChange) jsonChange {
	c.Prediction = ""
	for i := range c.Reasons {
		c.Reasons[i].Source = ""
	}
	return c
}

// TestDerivedChartBump (issue 14): a chart version bump changes only the
// metadata labels of built-in kinds; with no admission webhook or policy
// that can see the updates, the plan derives them without a dry-run, and
// --server-dry-run=all asks the server about each and gets the same
// verdicts, diffs and drift.
func TestDerivedChartBump(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	c.Helm(t, "install", "app", bumpChart(t, "1.0.0"), "-n", ns)
	derivedBump(t, c, ns, bumpChart(t, "2.0.0"))
}

// TestHelm4DerivedChartBump (issue 28) is TestDerivedChartBump for a Helm 4
// (server-side apply) release: the labels the bump changes are derived
// from the local field manager's merge, with the verdicts the server's
// dry-run applies give, and no dry-run apply sent.
func TestHelm4DerivedChartBump(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	mustBin(t, c, c.Helm4, "install", "app", bumpChart(t, "1.0.0"), "-n", ns)
	derivedBump(t, c, ns, bumpChart(t, "2.0.0"))
}

// derivedBump plans the chart bump next of release app in ns twice, by
// default and with --server-dry-run=all: the first derives every bumped
// object (no dry-run in the audit log), the second asks about each, and
// their verdicts are the same.
func derivedBump(t *testing.T, c *testcluster.Cluster, ns, next string) {
	t.Helper()
	before := auditMark(t, c)
	derived, r := planJSON(t, c, "app", next, "-n", ns, "--debug")
	if r.Code != 0 {
		t.Fatalf("exit %d\n%s", r.Code, r.Stderr)
	}
	for _, want := range []string{"stage render:", "stage live:", "stage predict+classify:", "stage report:", "request(s)", "derived without a dry-run"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("--debug does not say %q:\n%s", want, r.Stderr)
		}
	}
	if n := dryRunPatches(t, c, ns, before); len(n) != 0 {
		t.Errorf("dry-run patches sent for a metadata-only bump: %v\n%s", n, r.Stderr)
	}
	assertOnlyDryRunWrites(t, c, ns, before)

	before = auditMark(t, c)
	asked, r := planJSON(t, c, "app", next, "-n", ns, "--server-dry-run=all")
	if r.Code != 0 {
		t.Fatalf("--server-dry-run=all: exit %d\n%s", r.Code, r.Stderr)
	}
	n := dryRunPatches(t, c, ns, before)
	for _, o := range bumped {
		d, a := derived.change(t, o.kind, o.name), asked.change(t, o.kind, o.name)
		if d.Prediction != "derived" || a.Prediction != "server" {
			t.Errorf("%s/%s: prediction %q then %q, want derived then server", o.kind, o.name, d.Prediction, a.Prediction)
		}
		if d.Action != "update" || d.Class != "in-place" || !hasPathPrefix(d.paths(), "metadata.labels") {
			t.Errorf("%s/%s: %s %s %v, want an in-place update of metadata.labels", o.kind, o.name, d.Action, d.Class, d.paths())
		}
		if !reflect.DeepEqual(verdict(d), verdict(a)) {
			t.Errorf("%s/%s: derived and server verdicts differ:\nderived %+v\nserver  %+v", o.kind, o.name, d, a)
		}
		if n[o.resource] != 1 {
			t.Errorf("%s/%s: %d dry-run patches with --server-dry-run=all, want 1", o.kind, o.name, n[o.resource])
		}
	}
}

// TestServerAskedWhenAdmissionSees (issue 14): a ValidatingAdmissionPolicy
// that sees Service updates and asks the authorizer, whose answer only the
// server has (issue 55: other policies are evaluated client-side,
// TestPolicyVerdictsWithEveryDryRun), makes the plan ask the server about
// the Service (the audit log shows the dry-run), while the ConfigMap, which
// it cannot see, is still derived.
func TestServerAskedWhenAdmissionSees(t *testing.T) {
	c := testcluster.Get(t)
	c.RequireOwnCluster(t) // a cluster-wide policy
	ns := c.Namespace(t)
	c.Helm(t, "install", "app", bumpChart(t, "1.0.0"), "-n", ns)
	watchServices(t, c, ns)

	before := auditMark(t, c)
	p, r := planJSON(t, c, "app", bumpChart(t, "2.0.0"), "-n", ns, "--debug")
	if r.Code != 0 {
		t.Fatalf("exit %d\n%s", r.Code, r.Stderr)
	}
	if got := p.change(t, "Service", "api").Prediction; got != "server" {
		t.Errorf("Service seen by a policy: prediction %q, want server", got)
	}
	if got := p.change(t, "ConfigMap", "settings").Prediction; got != "derived" {
		t.Errorf("ConfigMap no policy sees: prediction %q, want derived", got)
	}
	n := dryRunPatches(t, c, ns, before)
	if n["services"] != 1 || n["configmaps"] != 0 {
		t.Errorf("dry-run patches %v: want the Service's only\n%s", n, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "ValidatingAdmissionPolicy: an expression asks the authorizer") {
		t.Errorf("--debug does not say why the Service was sent:\n%s", r.Stderr)
	}
}

// watchServices installs a ValidatingAdmissionPolicy, bound to ns, that sees
// (and allows) every Service update, asking the authorizer.
func watchServices(t *testing.T, c *testcluster.Cluster, ns string) {
	t.Helper()
	bindPolicy(t, c, ns, &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "watch-services-" + ns},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"services"}},
				},
			}}},
			Validations: []admissionv1.Validation{{Expression: "authorizer.group('').resource('services').namespace(object.metadata.namespace).check('get').allowed() || true"}},
		},
	})
}

// bindPolicy creates policy and a binding of it, denying, to ns only; both
// are deleted when the test ends.
func bindPolicy(t *testing.T, c *testcluster.Cluster, ns string, policy *admissionv1.ValidatingAdmissionPolicy) {
	t.Helper()
	bindPolicyWith(t, c, ns, policy, nil)
}

// TestPlanVerdictsWithEveryDryRun (issue 14): the verdict table, planned
// once as by default and once with --server-dry-run=all, gives the same
// verdicts, reasons, diffs and drift for every object.
func TestPlanVerdictsWithEveryDryRun(t *testing.T) {
	c := testcluster.Get(t)
	forEachPlanCase(t, c, func(t *testing.T, tc planCase, ns string) {
		c.Helm(t, "install", "app", writeChart(t, "app", "1.0.0", tc.v1), "-n", ns)
		// Frees what the table fixes (a Service's cluster IP) for
		// TestPlanVerdicts, also where no controller deletes namespaces.
		t.Cleanup(func() { c.Helm(t, "uninstall", "app", "-n", ns) })
		if tc.setup != nil {
			tc.setup(t, c, ns)
		}
		chart := writeChart(t, "app", "2.0.0", tc.v2)
		byDefault, r1 := planJSON(t, c, "app", chart, "-n", ns)
		asked, r2 := planJSON(t, c, "app", chart, "-n", ns, "--server-dry-run=all")
		if r1.Code != r2.Code || len(byDefault.Changes) != len(asked.Changes) {
			t.Fatalf("exit %d and %d, %d and %d changes", r1.Code, r2.Code, len(byDefault.Changes), len(asked.Changes))
		}
		for i := range byDefault.Changes {
			d, a := byDefault.Changes[i], asked.Changes[i]
			if a.Action == "update" && a.Prediction == "derived" {
				t.Errorf("%s/%s derived with --server-dry-run=all", a.Kind, a.Name)
			}
			if !reflect.DeepEqual(verdict(d), verdict(a)) {
				t.Errorf("%s/%s: verdicts differ:\ndefault %+v\nall     %+v", d.Kind, d.Name, d, a)
			}
		}
	})
}

// payloadChart is a chart of ConfigMaps and Secrets whose payload changes
// from version 1 to 2: the changes the server accepts, and those it refuses
// (an immutable ConfigMap, a key it does not allow, a payload over 1 MiB, a
// TLS Secret without its key).
func payloadChart(t *testing.T, version int) string {
	v := func(one, two string) string {
		if version == 1 {
			return one
		}
		return two
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, labels: {app.kubernetes.io/version: '{{ .Chart.Version }}'}}\n"
	secret := "apiVersion: v1\nkind: Secret\nmetadata: {name: %s}\ntype: %s\n"
	return writeChart(t, "app", fmt.Sprintf("%d.0.0", version), map[string]string{
		"settings.yaml": fmt.Sprintf(cm, "settings") + v("data: {mode: a, old: o}\n", "data: {mode: b, added: x}\n"),
		"bin.yaml":      fmt.Sprintf(cm, "bin") + v("binaryData: {b: eA==}\n", "binaryData: {b: eQ==}\n"),
		"emptied.yaml":  fmt.Sprintf(cm, "emptied") + v("data: {a: b}\n", ""),
		"creds.yaml":    fmt.Sprintf(secret, "creds", "Opaque") + v("stringData: {pw: s3cret-1}\n", "stringData: {pw: s3cret-2, user: admin}\n"),
		"raw.yaml":      fmt.Sprintf(secret, "raw", "Opaque") + v("data: {token: dDE=}\n", "data: {token: dDI=}\n"),
		"frozen.yaml":   fmt.Sprintf(cm, "frozen") + "immutable: true\n" + v("data: {mode: a}\n", "data: {mode: b}\n"),
		"badkey.yaml":   fmt.Sprintf(cm, "badkey") + v("data: {ok: a}\n", "data: {ok: a, 'bad key!': b}\n"),
		"big.yaml":      fmt.Sprintf(cm, "big") + v("data: {k: small}\n", "data: {k: '{{ repeat 1048577 \"x\" }}'}\n"),
		"tls.yaml":      fmt.Sprintf(secret, "tls", "kubernetes.io/tls") + v("data: {tls.crt: Yw==, tls.key: aw==}\n", "data: {tls.crt: Yw==}\n"),
	})
}

// maskedValue is a masked Secret value (pkg/redact).
var maskedValue = regexp.MustCompile(`hmac-sha256:[0-9a-f]+`)

// maskOrdinals numbers the masked values of diff in order of appearance, the
// same value the same number: what a diff says of them, without the plan's
// random masking key.
func maskOrdinals(diff string) string {
	seen := map[string]string{}
	return maskedValue.ReplaceAllStringFunc(diff, func(m string) string {
		if _, ok := seen[m]; !ok {
			seen[m] = fmt.Sprintf("value-%d", len(seen)+1)
		}
		return seen[m]
	})
}

// TestDerivedPayload (issue 14): a ConfigMap's or an Opaque Secret's payload
// change the server accepts is derived without a dry-run, while the changes
// it refuses (immutable, an invalid key, over 1 MiB, a TLS Secret missing
// its key) and those derivation does not cover are asked; every verdict,
// reason and diff is the one --server-dry-run=all gets from the server.
func TestDerivedPayload(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	c.Helm(t, "install", "app", payloadChart(t, 1), "-n", ns)
	next := payloadChart(t, 2)
	objects := []struct {
		kind, name string
		derived    bool
		class      string
	}{
		{"ConfigMap", "settings", true, "in-place"}, {"ConfigMap", "bin", true, "in-place"},
		{"Secret", "creds", true, "in-place"}, {"Secret", "raw", true, "in-place"},
		{"ConfigMap", "emptied", false, "in-place"}, // data removed whole: not derived
		{"ConfigMap", "frozen", false, ""}, {"ConfigMap", "badkey", false, "invalid"},
		{"ConfigMap", "big", false, "invalid"}, {"Secret", "tls", false, "invalid"},
	}

	before := auditMark(t, c)
	byDefault, r1 := planJSON(t, c, "app", next, "-n", ns, "--debug")
	n := dryRunPatches(t, c, ns, before)
	assertOnlyDryRunWrites(t, c, ns, before)
	asked, r2 := planJSON(t, c, "app", next, "-n", ns, "--server-dry-run=all")
	if r1.Code != r2.Code {
		t.Fatalf("exit %d by default, %d with --server-dry-run=all\n%s\n%s", r1.Code, r2.Code, r1.Stderr, r2.Stderr)
	}
	want := map[string]int{}
	for _, o := range objects {
		d, a := byDefault.change(t, o.kind, o.name), asked.change(t, o.kind, o.name)
		prediction := "server"
		if o.derived {
			prediction = "derived"
		} else {
			want[strings.ToLower(o.kind)+"s"]++
		}
		if d.Prediction != prediction || a.Prediction != "server" {
			t.Errorf("%s/%s: prediction %q then %q, want %q then server", o.kind, o.name, d.Prediction, a.Prediction, prediction)
		}
		if o.class != "" && d.Class != o.class {
			t.Errorf("%s/%s: class %q, want %q: %+v", o.kind, o.name, d.Class, o.class, d.Reasons)
		}
		// Each plan masks Secret values with its own key: the values are
		// compared by which are equal, within each diff.
		d.Diff, a.Diff = maskOrdinals(d.Diff), maskOrdinals(a.Diff)
		if !reflect.DeepEqual(verdict(d), verdict(a)) {
			t.Errorf("%s/%s: derived and server verdicts differ:\ndefault %+v\nall     %+v", o.kind, o.name, d, a)
		}
	}
	if !c.UserCluster && !reflect.DeepEqual(n, want) {
		t.Errorf("dry-run patches by default %v, want %v (the refused changes only)\n%s", n, want, r1.Stderr)
	}
	if !strings.Contains(r1.Stderr, "immutable ConfigMap") || !strings.Contains(r1.Stderr, "kubernetes.io/tls") {
		t.Errorf("--debug does not say why the immutable ConfigMap and the TLS Secret were sent:\n%s", r1.Stderr)
	}
}
