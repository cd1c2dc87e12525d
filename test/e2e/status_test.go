package e2e

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/cli"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// statusDoc mirrors the documented JSON document of status
// (docs/json-schema.md#status-document).
type statusDoc struct {
	APIVersion, Kind string
	Summary          struct{ Releases, InSync, Drifted, Missing, Extra int }
	Releases         []struct {
		Name, Namespace, HelmStatus, ApplyMethod string
		Revision                                 int
		Health                                   []string
		Objects                                  []struct {
			Kind, Namespace, Name, State, Next string
			Drift                              []struct {
				Path, Stored, Live, Manager, Operation, Time string
				Reverted                                     bool
			}
			Notes []string
		}
	}
}

// statusJSON runs status with -o json and --detailed-exitcode and decodes
// its document.
func statusJSON(t *testing.T, c *testcluster.Cluster, args ...string) (*statusDoc, result) {
	t.Helper()
	r := run(t, c, append([]string{"status"}, append(args, "-o", "json", "--detailed-exitcode")...)...)
	if r.Code == 1 {
		t.Fatalf("status failed (exit 1):\n%s\n%s", r.Stderr, r.Stdout)
	}
	var doc statusDoc
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		t.Fatalf("decoding the status document: %v\nstdout:\n%s\nstderr:\n%s", err, r.Stdout, r.Stderr)
	}
	if doc.APIVersion != "safe-upgrade/v1" || doc.Kind != "Status" {
		t.Fatalf("document %s %s, want safe-upgrade/v1 Status", doc.APIVersion, doc.Kind)
	}
	return &doc, r
}

// statusApp is a release whose Deployment leaves its replicas to an
// autoscaler (the chart does not set them), with a ConfigMap and a Service.
func statusApp(t *testing.T) string {
	return writeChart(t, "app", "1.0.0", map[string]string{
		"d.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1.27"}]}
`,
		"cm.yaml":  configMap(false, "fast"),
		"svc.yaml": service(""),
	})
}

// TestStatusDrift: after a kubectl edit of the image, a scale by an
// autoscaler, a deleted ConfigMap and a stray Service carrying the
// release's annotations, status names exactly those (the scale aside: the
// chart does not set replicas), says the next upgrade reverts the image
// with a rolling update and re-creates the ConfigMap, and exits 3 with
// --detailed-exitcode; an untouched release exits 0 with nothing to say.
func TestStatusDrift(t *testing.T) {
	c := testcluster.Get(t)
	c.RequireOwnCluster(t) // pods run under kwok
	ns := c.Namespace(t)
	c.Helm(t, "install", "app", statusApp(t), "-n", ns, "--wait", "--timeout", "5m")

	doc, r := statusJSON(t, c, "app", "-n", ns)
	if r.Code != 0 || doc.Summary.Drifted+doc.Summary.Missing+doc.Summary.Extra != 0 || doc.Summary.InSync != 3 {
		t.Fatalf("untouched release: exit %d, summary %+v, want 0 and 3 in sync\n%s\n%s", r.Code, doc.Summary, r.Stdout, r.Stderr)
	}
	if rel := doc.Releases[0]; rel.HelmStatus != "deployed" || len(rel.Health) != 0 {
		t.Errorf("untouched release: Helm status %q, health %q; want deployed, none", rel.HelmStatus, rel.Health)
	}

	cs := c.Clientset(t)
	ctx := t.Context()
	// kubectl edit's own field manager, as it patches.
	if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, "web", types.StrategicMergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.28"}]}}}}`),
		metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	// An autoscaler scales through the scale subresource.
	if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`),
		metav1.PatchOptions{FieldManager: "horizontal-pod-autoscaler"}, "scale"); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "settings", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	stray := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "stray", Namespace: ns,
		Labels:      map[string]string{"app.kubernetes.io/managed-by": "Helm"},
		Annotations: map[string]string{"meta.helm.sh/release-name": "app", "meta.helm.sh/release-namespace": ns}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 8080}}}}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, stray, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	doc, r = statusJSON(t, c, "app", "-n", ns)
	if r.Code != cli.ExitPending {
		t.Errorf("exit %d, want 3\n%s", r.Code, r.Stderr)
	}
	if s := doc.Summary; s.InSync != 1 || s.Drifted != 1 || s.Missing != 1 || s.Extra != 1 {
		t.Errorf("summary %+v, want 1 in sync (the Service), 1 drifted, 1 missing, 1 extra\n%s", s, r.Stdout)
	}
	states := map[string]string{}
	for _, o := range doc.Releases[0].Objects {
		states[o.Kind+"/"+o.Name] = o.State + " " + o.Next
		switch o.Kind + "/" + o.Name {
		case "Deployment/web":
			if len(o.Drift) != 1 {
				t.Fatalf("Deployment/web drift %+v, want the image only", o.Drift)
			}
			d := o.Drift[0]
			if d.Path != "spec.template.spec.containers[0].image" || d.Stored != "nginx:1.27" || d.Live != "nginx:1.28" ||
				d.Manager != "kubectl-edit" || d.Operation != "Update" || d.Time == "" || !d.Reverted {
				t.Errorf("Deployment/web drift %+v, want the image nginx:1.27 → nginx:1.28 by kubectl-edit (Update), reverted", d)
			}
		case "Service/stray":
			if len(o.Notes) == 0 || !strings.Contains(o.Notes[0], "annotation meta.helm.sh/release-name names the release") {
				t.Errorf("Service/stray notes %q, want why it is the release's", o.Notes)
			}
		}
	}
	want := map[string]string{"Deployment/web": "drifted rolling", "ConfigMap/settings": "missing create", "Service/stray": "extra ", "Service/api": "in-sync "}
	for k, v := range want {
		if states[k] != v {
			t.Errorf("%s: %q, want %q (all: %v)", k, states[k], v, states)
		}
	}
	if len(states) != len(want) {
		t.Errorf("objects %v, want exactly %v", states, want)
	}

	// The text names the same, for a person.
	r = run(t, c, "status", "app", "-n", ns)
	saysAll(t, "status text", r.Stdout, "drifted  Deployment.apps/"+ns+"/web: next upgrade: reverted (rolling)",
		"spec.template.spec.containers[0].image: nginx:1.27 → nginx:1.28 (manager kubectl-edit, Update, ",
		"missing  ConfigMap/"+ns+"/settings: next upgrade: re-created", "extra    Service/"+ns+"/stray")
	if r.Code != 0 {
		t.Errorf("without --detailed-exitcode: exit %d, want 0", r.Code)
	}
}

// TestStatusSeveralReleasesOneListPerKind: two untouched releases in two
// namespaces, one installed by Helm 3 and one by Helm 4 (server-side
// apply), asked together in every namespace (-A): both in sync, exit 0
// with --detailed-exitcode, and each kind LISTed once for both.
func TestStatusSeveralReleasesOneListPerKind(t *testing.T) {
	c := testcluster.Get(t)
	ns3, ns4 := c.Namespace(t), c.Namespace(t)
	chart := statusApp(t)
	c.Helm(t, "install", "one", chart, "-n", ns3)
	c.HelmV4(t, "install", "two", chart, "-n", ns4)

	before := len(c.AuditEvents(t, nil))
	doc, r := statusJSON(t, c, "one", "two", "-A")
	if r.Code != 0 || len(doc.Releases) != 2 || doc.Summary.InSync != 6 || doc.Summary.Drifted+doc.Summary.Missing+doc.Summary.Extra != 0 {
		t.Fatalf("exit %d, summary %+v of %d release(s); want 0, 6 objects in sync in 2 releases\n%s\n%s", r.Code, doc.Summary, len(doc.Releases), r.Stdout, r.Stderr)
	}
	methods := map[string]string{}
	for _, rel := range doc.Releases {
		methods[rel.Namespace+"/"+rel.Name] = rel.ApplyMethod
	}
	if methods[ns3+"/one"] != "csa" || methods[ns4+"/two"] != "ssa" {
		t.Errorf("apply methods %v, want one csa (Helm 3) and two ssa (Helm 4)", methods)
	}
	lists := map[string]int{}
	for _, e := range c.AuditEvents(t, nil)[before:] {
		if e.Verb == "list" && e.Stage == "ResponseComplete" && strings.HasPrefix(e.UserAgent, "helm-safe-upgrade/") {
			switch e.ObjectRef.Resource {
			case "deployments", "configmaps", "services":
				lists[e.ObjectRef.Resource+" in "+orAll(e.ObjectRef.Namespace)]++
			}
		}
	}
	want := map[string]int{"deployments in every namespace": 1, "configmaps in every namespace": 1, "services in every namespace": 1}
	if len(lists) != len(want) {
		t.Errorf("LISTs %v, want %v", lists, want)
	}
	for k, n := range want {
		if lists[k] != n {
			t.Errorf("LISTs of %s: %d, want %d (all: %v)", k, lists[k], n, lists)
		}
	}
}

func orAll(ns string) string {
	if ns == "" {
		return "every namespace"
	}
	return ns
}

// TestStatusWorkloadNotReady: a workload whose pods cannot pull their
// image is in sync with its release but not ready, and status says why in
// the release's health, with the watch's reason.
func TestStatusWorkloadNotReady(t *testing.T) {
	c := testcluster.Get(t)
	c.RequireOwnCluster(t) // image tags fail only under kwok's stages
	ns := c.Namespace(t)
	c.Helm(t, "install", "app", writeChart(t, "app", "1.0.0", map[string]string{"d.yaml": deployment("web", "nginx:pull-error", "RollingUpdate", 1)}), "-n", ns)
	var last string
	waitFor(t, "status to name the image pull error", func() bool {
		doc, r := statusJSON(t, c, "app", "-n", ns)
		last = r.Stdout
		return r.Code == 0 && len(doc.Releases) == 1 && len(doc.Releases[0].Health) == 1 &&
			strings.Contains(doc.Releases[0].Health[0], "ImagePull")
	})
	saysAll(t, "status", last, "Deployment.apps/"+ns+"/web not ready: ", "nginx:pull-error")
}

// TestStatusStatefulSetClaimsGrown: a StatefulSet whose claim template
// grew through an acknowledged recreate (the StatefulSet orphaned and made
// again over the same pods and claims) is in sync with its new revision:
// status, volumeClaimTemplates' defaults and the pods' claims are no drift.
func TestStatusStatefulSetClaimsGrown(t *testing.T) {
	c := testcluster.Get(t)
	ns, v2 := stsRelease(t, c)
	if r := run(t, c, "app", v2, "-n", ns, "--ack", "StatefulSet/"+ns+"/db"); r.Code != 0 {
		t.Fatalf("acknowledged recreate: exit %d\n%s", r.Code, r.Stderr)
	}
	doc, r := statusJSON(t, c, "app", "-n", ns)
	if r.Code != 0 || doc.Summary.InSync != 1 || doc.Summary.Drifted+doc.Summary.Missing+doc.Summary.Extra != 0 {
		t.Fatalf("exit %d, summary %+v; want 0 and the StatefulSet in sync\n%s\n%s", r.Code, doc.Summary, r.Stdout, r.Stderr)
	}
	if rel := doc.Releases[0]; rel.Revision != 2 || rel.HelmStatus != "deployed" || len(rel.Health) != 0 {
		t.Errorf("revision %d, Helm status %q, health %q; want 2, deployed, none", rel.Revision, rel.HelmStatus, rel.Health)
	}
}

// TestStatusSecretsAndHostileText: a Secret's value changed in the cluster
// is drift shown masked (neither value, plain or base64, in any format),
// a ConfigMap value holding terminal escapes is shown escaped, and a chart
// whose values are regenerated on every render is in sync while untouched
// (status renders nothing).
func TestStatusSecretsAndHostileText(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	const stored, changed = "status-secret-4711", "changed-secret-0815"
	chart := writeChart(t, "app", "1.0.0", map[string]string{
		"s.yaml":     "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: " + stored + "}\n",
		"cm.yaml":    configMap(false, "fast"),
		"token.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: token}\ndata: {token: {{ randAlphaNum 16 | quote }}}\n",
	})
	c.Helm(t, "install", "app", chart, "-n", ns)
	if doc, r := statusJSON(t, c, "app", "-n", ns); r.Code != 0 || doc.Summary.InSync != 3 {
		t.Fatalf("untouched release with a regenerated value: exit %d, summary %+v; want 0, 3 in sync\n%s", r.Code, doc.Summary, r.Stderr)
	}
	cs := c.Clientset(t)
	if _, err := cs.CoreV1().Secrets(ns).Patch(t.Context(), "db", types.StrategicMergePatchType,
		[]byte(`{"stringData":{"password":"`+changed+`"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Patch(t.Context(), "settings", types.MergePatchType,
		[]byte(`{"data":{"mode":"\u001b[31mred\u001b]0;owned\u0007"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	forbidden := []string{stored, changed, b64(stored), b64(changed), "\x1b"}
	for _, format := range []string{"text", "json", "markdown", "sarif"} {
		r := run(t, c, "status", "app", "-n", ns, "-o", format, "--detailed-exitcode")
		if r.Code != cli.ExitPending {
			t.Errorf("-o %s: exit %d, want 3\n%s", format, r.Code, r.Stderr)
		}
		for _, f := range forbidden {
			if strings.Contains(r.Stdout+r.Stderr, f) {
				t.Errorf("-o %s: output holds %q:\n%s\n%s", format, f, r.Stdout, r.Stderr)
			}
		}
		if format == "text" {
			saysAll(t, "status text", r.Stdout, "drifted  Secret/"+ns+"/db", "data.password: (sensitive: ", "(manager kubectl-edit, Update, ",
				`data.mode: fast → \x1b[31mred\x1b]0;owned\a`)
		}
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestStatusHelm4Drift: on a release Helm 4 applied server-side, a field
// `kubectl edit` took from Helm is drift owned by kubectl-edit, and the next
// upgrade's verdict is Helm 4's: its apply conflicts with that manager.
func TestStatusHelm4Drift(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	c.HelmV4(t, "install", "app", statusApp(t), "-n", ns)
	if _, err := c.Clientset(t).CoreV1().ConfigMaps(ns).Patch(t.Context(), "settings", types.StrategicMergePatchType,
		[]byte(`{"data":{"mode":"slow"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	doc, r := statusJSON(t, c, "app", "-n", ns)
	if r.Code != cli.ExitPending || doc.Releases[0].ApplyMethod != "ssa" {
		t.Fatalf("exit %d, apply method %q; want 3, ssa\n%s\n%s", r.Code, doc.Releases[0].ApplyMethod, r.Stdout, r.Stderr)
	}
	for _, o := range doc.Releases[0].Objects {
		if o.Kind != "ConfigMap" {
			if o.State != "in-sync" {
				t.Errorf("%s/%s: %s, want in-sync", o.Kind, o.Name, o.State)
			}
			continue
		}
		if o.State != "drifted" || o.Next != "invalid" || len(o.Drift) != 1 || o.Drift[0].Path != "data.mode" || o.Drift[0].Manager != "kubectl-edit" {
			t.Errorf("ConfigMap/settings: %+v; want drifted at data.mode by kubectl-edit, next upgrade invalid (a conflict)", o)
		}
	}
}
