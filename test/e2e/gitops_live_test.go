package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/kube"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/cli"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/chartrepo"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/filetree"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// storePassword is the value of storeChart's Secret, which no output may
// hold (kubectl's last-applied configuration of the Secret holds it).
const storePassword = "argo-live-sekret-1729"

// storeChart is chartrepo's web chart (a Deployment named after the
// release, its image tag the value image.tag) with a Secret of the value
// password and, while the value data is true (the default), a
// PersistentVolumeClaim.
func storeChart(t *testing.T) string {
	t.Helper()
	dir := chartrepo.WebChart(t)
	pvc := `{{- if .Values.data }}
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: {{ .Release.Name }}-data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
{{- end }}
`
	secret := "apiVersion: v1\nkind: Secret\nmetadata: {name: {{ .Release.Name }}-creds}\nstringData: {password: {{ .Values.password | quote }}}\n"
	for file, data := range map[string]string{"pvc.yaml": pvc, "secret.yaml": secret} {
		if err := os.WriteFile(filepath.Join(dir, "templates", file), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	values, err := os.OpenFile(filepath.Join(dir, "values.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err == nil {
		_, err = values.WriteString("data: true\npassword: " + storePassword + "\n")
		err = errors.Join(err, values.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// argoSide writes a checkout holding the Application app of the release
// store.
func argoSide(t *testing.T, app, url, ns, params, syncPolicy string) string {
	t.Helper()
	return filetree.Write(t, map[string]string{"app.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: " + app + ", namespace: argocd}\nspec:\n" +
		"  destination: {namespace: " + ns + "}\n" +
		"  source: {repoURL: \"" + url + "\", chart: web, targetRevision: 1.0.0, helm: {releaseName: store, parameters: [" + params + "]}}\n" +
		"  syncPolicy: " + syncPolicy + "\n"})
}

// argoSync applies chart as Argo CD's sync does, with the real kubectl:
// helm template's objects (release store, namespace ns, --set sets), each
// given the namespace and marked by mark (Argo CD's tracking), applied with
// kubectl apply and args (client-side by default: last-applied kept).
func argoSync(t *testing.T, c *testcluster.Cluster, chart, ns string, sets []string, mark func(*unstructured.Unstructured), args ...string) {
	t.Helper()
	tmpl := []string{"template", "store", chart, "-n", ns}
	for _, s := range sets {
		tmpl = append(tmpl, "--set", s)
	}
	out := c.Helm(t, tmpl...)
	var list bytes.Buffer
	for _, doc := range strings.Split(out, "\n---") {
		var obj map[string]interface{}
		if err := sigsyaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		if obj == nil {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		u.SetNamespace(ns)
		mark(u)
		data, err := json.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		list.Write(data)
		list.WriteString("\n")
	}
	file := filepath.Join(t.TempDir(), "objects.json")
	if err := os.WriteFile(file, list.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	mustBin(t, c, c.Kubectl, append([]string{"apply", "-n", ns, "-f", file}, args...)...)
}

// argoFixture is the objects of the Application store as Argo CD's sync
// left them in ns (see argoSync), the Application's name (store unless a
// test names it otherwise) and the chart repository url of its chart.
type argoFixture struct {
	c            *testcluster.Cluster
	app, ns, url string
}

// newArgoFixture syncs the chart store into a namespace of its own, each
// object marked by mark, applied with kubectl apply and args.
func newArgoFixture(t *testing.T, mark func(*unstructured.Unstructured), args ...string) argoFixture {
	t.Helper()
	return newArgoFixtureOf(t, storeChart(t), mark, args...)
}

// newArgoFixtureOf is newArgoFixture of the chart directory chart.
func newArgoFixtureOf(t *testing.T, chart string, mark func(*unstructured.Unstructured), args ...string) argoFixture {
	t.Helper()
	f := argoFixture{c: testcluster.Get(t), app: "store"}
	f.ns = f.c.Namespace(t)
	f.url, _ = chartrepo.Serve(t, chart)
	argoSync(t, f.c, chart, f.ns, nil, mark, args...)
	return f
}

// plan plans the Application with syncPolicy from the chart's defaults
// (the base) to headParams (the head's parameters).
func (f argoFixture) plan(t *testing.T, syncPolicy, headParams string, args ...string) (*jsonPlan, string, result) {
	t.Helper()
	return gitopsPlan(t, f.c, argoSide(t, f.app, f.url, f.ns, "", syncPolicy), argoSide(t, f.app, f.url, f.ns, headParams, syncPolicy), args...)
}

// rollsFromServer checks that the head's image tag rolls the Deployment,
// as the server's dry-run answers.
func rollsFromServer(t *testing.T, p *jsonPlan) jsonChange {
	t.Helper()
	d := p.change(t, "Deployment", "store")
	if d.Action != "update" || d.Prediction != "server" || d.Rollout == nil || !hasPathPrefix(d.paths(), "spec.template.spec.containers") {
		t.Errorf("Deployment: %s %s prediction %s rollout %v paths %v: want a rolling update of its image from the server's dry-run", d.Action, d.Class, d.Prediction, d.Rollout, d.paths())
	}
	return d
}

// byLabel marks an object as Argo CD 2's label tracking does.
func byLabel(u *unstructured.Unstructured) {
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["app.kubernetes.io/instance"] = "store"
	u.SetLabels(labels)
}

// gitopsPlan runs gitops BASE HEAD --live -o json and returns the plan of
// its one release, its notes joined, and the run.
func gitopsPlan(t *testing.T, c *testcluster.Cluster, base, head string, args ...string) (*jsonPlan, string, result) {
	t.Helper()
	r := run(t, c, append([]string{"gitops", base, head, "--live", "-o", "json"}, args...)...)
	if r.Code == 1 {
		t.Fatalf("exit 1\n%s\n%s", r.Stderr, r.Stdout)
	}
	for _, secret := range []string{storePassword, base64.StdEncoding.EncodeToString([]byte(storePassword))} {
		if strings.Contains(r.Stdout+r.Stderr, secret) {
			t.Fatalf("the Secret's value is in the output:\n%s\n%s", r.Stdout, r.Stderr)
		}
	}
	var doc struct {
		Releases []struct{ Plan json.RawMessage }
	}
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || len(doc.Releases) != 1 {
		t.Fatalf("%v\n%s", err, r.Stdout)
	}
	var p jsonPlan
	var n struct{ Notes []string }
	if err := json.Unmarshal(doc.Releases[0].Plan, &p); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(doc.Releases[0].Plan, &n); err != nil {
		t.Fatal(err)
	}
	return &p, strings.Join(n.Notes, "\n"), r
}

// TestGitOpsLiveApplication: an Application whose objects Argo CD's sync
// applied (kubectl apply, client-side, with its tracking label) is planned
// with --live against them, three-way with their last-applied
// configurations: a parameter's change rolls the Deployment, a label only
// the last-applied configuration holds is removed, a field someone else
// set is kept (drift, not reverted); an unchanged claim is a no-op (the
// last-applied configuration the plan computes is kubectl's). A head that
// no longer renders the claim deletes it with prune on (data loss, blocked)
// and leaves it, OutOfSync, with prune off.
func TestGitOpsLiveApplication(t *testing.T) {
	f := newArgoFixture(t, func(u *unstructured.Unstructured) {
		byLabel(u)
		if u.GetKind() == "Deployment" {
			labels := u.GetLabels()
			labels["old"] = "yes" // in the last-applied configuration only
			u.SetLabels(labels)
		}
	})
	c, ns, url := f.c, f.ns, f.url
	mustBin(t, c, c.Kubectl, "annotate", "-n", ns, "deployment", "store", "ops.example/owner=ops")

	prune := "{automated: {prune: true}}"
	base := argoSide(t, "store", url, ns, "", prune)
	p, notes, r := gitopsPlan(t, c, base, argoSide(t, "store", url, ns, "{name: image.tag, value: b}", prune))
	if r.Code != 0 {
		t.Fatalf("parameter change: exit %d, want 0\n%s", r.Code, r.Stderr)
	}
	for _, want := range []string{"--live: planned against the live objects of Application store in namespace " + ns, "tracked by label app.kubernetes.io/instance=store",
		"three-way with each object's last-applied configuration (3 object(s))", "Argo CD itself was not run"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes do not say %q:\n%s", want, notes)
		}
	}
	deploy := rollsFromServer(t, p)
	if !strings.Contains(deploy.Diff, "-    old: \"yes\"") {
		t.Errorf("the label only the last-applied configuration holds is not removed:\n%s", deploy.Diff)
	}
	if !strings.Contains(deploy.Diff, "     ops.example/owner: ops") {
		t.Errorf("the annotation someone else set is not kept:\n%s", deploy.Diff)
	}
	for _, d := range deploy.Drift {
		if strings.Contains(d.Path, "ops.example/owner") && d.Reverted {
			t.Errorf("drift %+v: kubectl's three-way keeps a field someone else set", d)
		}
	}
	if pvc := p.change(t, "PersistentVolumeClaim", "store-data"); pvc.Action != "noop" {
		t.Errorf("unchanged claim: %s %+v, want noop", pvc.Action, pvc.Reasons)
	}

	dropped := "{name: data, value: \"false\"}"
	p, _, r = gitopsPlan(t, c, base, argoSide(t, "store", url, ns, dropped, prune))
	if pvc := p.change(t, "PersistentVolumeClaim", "store-data"); r.Code != 2 || pvc.Action != "delete" || !pvc.Destructive {
		t.Errorf("claim dropped, prune on: exit %d, %s destructive %v %+v: want a blocked delete\n%s", r.Code, pvc.Action, pvc.Destructive, pvc.Reasons, r.Stderr)
	}

	noPrune := "{automated: {prune: false}}"
	p, notes, r = gitopsPlan(t, c, argoSide(t, "store", url, ns, "", noPrune), argoSide(t, "store", url, ns, dropped, noPrune), "--detailed-exitcode")
	pvc := p.change(t, "PersistentVolumeClaim", "store-data")
	if r.Code == 2 || r.Code == 1 || pvc.Action != "noop" || pvc.Destructive || len(pvc.Reasons) == 0 || !strings.Contains(pvc.Reasons[0].Message, "left in the cluster, OutOfSync (prune is off") {
		t.Errorf("claim dropped, prune off: exit %d, %s destructive %v %+v: want it listed as left", r.Code, pvc.Action, pvc.Destructive, pvc.Reasons)
	}
	if !strings.Contains(notes, "PersistentVolumeClaim/"+ns+"/store-data: no longer rendered: left in the cluster, OutOfSync (prune is off") {
		t.Errorf("notes do not list the claim left in the cluster:\n%s", notes)
	}
	if _, err := c.Clientset(t).CoreV1().PersistentVolumeClaims(ns).Get(t.Context(), "store-data", metav1.GetOptions{}); err != nil {
		t.Fatalf("the plan deleted the claim: %v", err)
	}
}

// TestGitOpsLiveApplicationTrackingAnnotation: objects tracked by Argo CD
// 3's annotation are found by it, under the Application's name (not the
// release's): a head that drops the claim prunes it.
func TestGitOpsLiveApplicationTrackingAnnotation(t *testing.T) {
	// The Application shop renders the release store: Argo CD tracks by
	// the Application's name.
	f := newArgoFixture(t, func(u *unstructured.Unstructured) {
		group := u.GroupVersionKind().Group
		u.SetAnnotations(map[string]string{"argocd.argoproj.io/tracking-id": "shop:" + group + "/" + u.GetKind() + ":" + u.GetNamespace() + "/" + u.GetName()})
	})
	f.app = "shop"
	p, notes, r := f.plan(t, "{automated: {prune: true}}", "{name: data, value: \"false\"}")
	if pvc := p.change(t, "PersistentVolumeClaim", "store-data"); r.Code != 2 || pvc.Action != "delete" || !pvc.Destructive {
		t.Errorf("exit %d, claim %s destructive %v: want a blocked delete\n%s", r.Code, pvc.Action, pvc.Destructive, r.Stderr)
	}
	if d := p.change(t, "Deployment", "store"); d.Action != "noop" {
		t.Errorf("unchanged Deployment: %s %+v %s, want noop", d.Action, d.Reasons, d.Diff)
	}
	if !strings.Contains(notes, "tracked by annotation argocd.argoproj.io/tracking-id") {
		t.Errorf("notes do not name the annotation:\n%s", notes)
	}
}

// TestGitOpsLiveApplicationNotTracked: under annotation tracking, a claim
// carrying only the instance label (as a StatefulSet's claims carry their
// pod template's labels) is not the Application's, and an object with an
// owner reference is its owner's, even with the annotation: with prune on,
// neither is planned as pruned, and a parameter change is not blocked.
func TestGitOpsLiveApplicationNotTracked(t *testing.T) {
	f := newArgoFixture(t, func(u *unstructured.Unstructured) {
		group := u.GroupVersionKind().Group
		u.SetAnnotations(map[string]string{"argocd.argoproj.io/tracking-id": "store:" + group + "/" + u.GetKind() + ":" + u.GetNamespace() + "/" + u.GetName()})
	})
	c, ns := f.c, f.ns
	deploy, err := c.Clientset(t).AppsV1().Deployments(ns).Get(t.Context(), "store", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim := func(name string, labels, annotations map[string]string, owners []metav1.OwnerReference) {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations, OwnerReferences: owners},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
		if _, err := c.Clientset(t).CoreV1().PersistentVolumeClaims(ns).Create(t.Context(), pvc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	claim("data-db-0", map[string]string{"app.kubernetes.io/instance": "store"}, nil, nil)
	claim("owned", nil, map[string]string{"argocd.argoproj.io/tracking-id": "store:/PersistentVolumeClaim:" + ns + "/owned"},
		[]metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "store", UID: deploy.UID}})
	p, notes, r := f.plan(t, "{automated: {prune: true}}", "{name: image.tag, value: b}")
	if r.Code != 0 {
		t.Errorf("exit %d, want 0\n%s", r.Code, r.Stderr)
	}
	for _, ch := range p.Changes {
		if ch.Name == "data-db-0" || ch.Name == "owned" {
			t.Errorf("%s/%s planned: %s %+v; Argo CD does not track it", ch.Kind, ch.Name, ch.Action, ch.Reasons)
		}
	}
	if !strings.Contains(notes, "tracked by annotation argocd.argoproj.io/tracking-id") {
		t.Errorf("notes do not name the annotation:\n%s", notes)
	}
}

// TestGitOpsLiveApplicationServerSide: an Application with
// ServerSideApply=true, whose objects were applied server-side as
// argocd-controller, is planned with the server's dry-run of that apply.
func TestGitOpsLiveApplicationServerSide(t *testing.T) {
	f := newArgoFixture(t, byLabel, "--server-side", "--field-manager", "argocd-controller")
	p, notes, r := f.plan(t, "{automated: {prune: true}, syncOptions: [ServerSideApply=true]}", "{name: image.tag, value: b}")
	if r.Code != 0 || p.Release.ApplyMethod != "ssa" {
		t.Fatalf("exit %d, apply method %q: want 0 and ssa\n%s", r.Code, p.Release.ApplyMethod, r.Stderr)
	}
	if p.Release.SyncedBy != "Argo CD Application argocd/store" || p.Release.Revision != 0 {
		t.Errorf("release %+v: want it synced by the Application, with no Helm revision", p.Release)
	}
	deploy := rollsFromServer(t, p)
	for _, reason := range deploy.Reasons {
		if reason.Manager != "" {
			t.Errorf("reason %+v: Argo CD's apply takes no field from another manager here (its own fields are argocd-controller's)", reason)
		}
	}
	if pvc := p.change(t, "PersistentVolumeClaim", "store-data"); pvc.Action != "noop" {
		t.Errorf("unchanged claim: %s %+v %s, want noop", pvc.Action, pvc.Reasons, pvc.Diff)
	}
	if !strings.Contains(notes, "field manager argocd-controller") {
		t.Errorf("notes do not say the apply is server-side as argocd-controller:\n%s", notes)
	}
}

// TestGitOpsLiveApplicationReplace: with Replace=true Argo CD replaces
// each object with PUT; the plan sends that PUT as a dry-run.
func TestGitOpsLiveApplicationReplace(t *testing.T) {
	p, notes, r := newArgoFixture(t, byLabel).plan(t, "{syncOptions: [Replace=true]}", "{name: image.tag, value: b}")
	if r.Code != 0 || !strings.Contains(notes, "Replace=true: Argo CD replaces (PUT)") {
		t.Fatalf("exit %d: want 0 and notes naming the PUT\n%s\n%s", r.Code, notes, r.Stderr)
	}
	rollsFromServer(t, p)
}

// TestGitOpsLiveApplicationObjectSyncOptions: an object's
// argocd.argoproj.io/sync-options annotation overrides the Application's
// client-side apply for that object, as gitops-engine's applyObject reads
// it. ServerSideApply=true: the server's dry-run of argocd-controller's
// forced apply, which takes the field another manager set; Replace=true:
// the dry-run of a PUT, which drops what the render does not hold; the
// Deployment, without the annotation, keeps kubectl's three-way.
func TestGitOpsLiveApplicationObjectSyncOptions(t *testing.T) {
	chart := storeChart(t)
	for name, option := range map[string]string{"settings": "ServerSideApply=true", "swap": "Replace=true"} {
		cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-" + name +
			"\n  annotations: {argocd.argoproj.io/sync-options: \"Prune=false, " + option + "\"}\ndata: {tag: {{ .Values.image.tag | quote }}}\n"
		if err := os.WriteFile(filepath.Join(chart, "templates", name+".yaml"), []byte(cm), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := newArgoFixtureOf(t, chart, byLabel)
	c, ns := f.c, f.ns
	mustBin(t, c, c.Kubectl, "patch", "-n", ns, "configmap", "store-settings", "--field-manager", "ops", "--type", "merge", "-p", `{"data":{"tag":"ops"}}`)
	for _, obj := range []string{"configmap/store-swap", "deployment/store"} {
		mustBin(t, c, c.Kubectl, "annotate", "-n", ns, obj, "ops.example/owner=ops")
	}

	// Taking a field from another manager is destructive, to acknowledge:
	// store-settings alone blocks.
	p, notes, r := f.plan(t, "{automated: {prune: true}}", "{name: image.tag, value: b}")
	if r.Code != 2 || p.Release.ApplyMethod != "csa" || p.Summary["blocked"] != 1 {
		t.Fatalf("exit %d, apply method %q, summary %v: want 2, the Application's csa and one blocked change\n%s", r.Code, p.Release.ApplyMethod, p.Summary, r.Stderr)
	}
	for _, want := range []string{
		"ConfigMap/" + ns + "/store-settings: argocd.argoproj.io/sync-options \"Prune=false, ServerSideApply=true\" overrides the Application's syncOptions: applied server-side as argocd-controller",
		"ConfigMap/" + ns + "/store-swap: argocd.argoproj.io/sync-options \"Prune=false, Replace=true\" overrides the Application's syncOptions: replaced (PUT)",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes do not say %q:\n%s", want, notes)
		}
	}
	settings := p.change(t, "ConfigMap", "store-settings")
	taken := false
	for _, reason := range settings.Reasons {
		taken = taken || reason.Manager == "ops" && strings.Contains(reason.Message, "Argo CD's server-side apply forces conflicts") && !strings.Contains(reason.Message, "Helm")
	}
	if settings.Action != "update" || settings.Prediction != "server" || !taken || !settings.Destructive {
		t.Errorf("store-settings: %s prediction %s reasons %+v: want the server's dry-run of a forced apply taking data.tag from manager ops", settings.Action, settings.Prediction, settings.Reasons)
	}
	if swap := p.change(t, "ConfigMap", "store-swap"); swap.Action != "update" || !strings.Contains(swap.Diff, "-    ops.example/owner: ops") {
		t.Errorf("store-swap: %s, want its PUT to drop the annotation the render does not hold:\n%s", swap.Action, swap.Diff)
	}
	if deploy := rollsFromServer(t, p); !strings.Contains(deploy.Diff, "     ops.example/owner: ops") {
		t.Errorf("Deployment: kubectl's three-way keeps the annotation someone else set:\n%s", deploy.Diff)
	}
}

// TestGitOpsLiveApplicationCreateNamespace: an Application whose
// destination namespace does not exist is planned with the Namespace Argo
// CD creates when syncOptions hold CreateNamespace=true (with its
// managedNamespaceMetadata), and blocked without: the sync would fail.
func TestGitOpsLiveApplicationCreateNamespace(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t) + "-new" // a name no test creates
	chart := storeChart(t)
	url, _ := chartrepo.Serve(t, chart)
	plan := func(syncPolicy string) (*jsonPlan, string, result) {
		return gitopsPlan(t, c, argoSide(t, "store", url, ns, "", syncPolicy), argoSide(t, "store", url, ns, "{name: image.tag, value: b}", syncPolicy))
	}

	p, notes, r := plan("{syncOptions: [CreateNamespace=true], managedNamespaceMetadata: {labels: {team: shop}}}")
	if r.Code != 0 {
		t.Fatalf("CreateNamespace=true: exit %d, want 0\n%s\n%s", r.Code, r.Stderr, r.Stdout)
	}
	created := p.change(t, "Namespace", ns)
	if created.Action != "create" || !strings.Contains(created.Diff, "team: shop") || !strings.Contains(created.Diff, "ServerSideApply=true") {
		t.Errorf("Namespace %s: %s, want a create with the managed metadata:\n%s", ns, created.Action, created.Diff)
	}
	if d := p.change(t, "Deployment", "store"); d.Action != "create" {
		t.Errorf("Deployment: %s, want create", d.Action)
	}
	if !strings.Contains(notes, "namespace "+ns+" does not exist: Argo CD creates it first (CreateNamespace=true)") {
		t.Errorf("notes do not say Argo CD creates the namespace:\n%s", notes)
	}

	_, _, r = plan("{automated: {prune: true}}")
	if r.Code != 2 || !strings.Contains(r.Stdout, "does not exist and the Application's syncOptions do not hold CreateNamespace=true") {
		t.Errorf("without CreateNamespace=true: exit %d, want 2 and the blocker\n%s\n%s", r.Code, r.Stderr, r.Stdout)
	}
	if _, err := c.Clientset(t).CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{}); err == nil {
		t.Errorf("the plan created namespace %s", ns)
	}
}

// runUnreachable runs the tool with args against a kubeconfig whose
// server does not answer, and returns its exit code and stderr.
func runUnreachable(t *testing.T, args ...string) (int, string) {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: x, cluster: {server: \"https://127.0.0.1:1\"}}]\n"+
		"contexts: [{name: x, context: {cluster: x, user: x}}]\ncurrent-context: x\nusers: [{name: x, user: {token: t}}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	streams := iostreams.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	code := cli.ExecuteWithMasker("helm-safe-upgrade", append(args, "--kubeconfig", kubeconfig), streams, cli.BuildInfo{Version: "e2e"}, redact.NewMasker())
	return code, errOut.String()
}

// grant lets user do what rules say in namespace ns, and nothing more.
func grant(t *testing.T, c *testcluster.Cluster, ns, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	rbac := c.Clientset(t).RbacV1()
	if _, err := rbac.Roles(ns).Create(t.Context(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
	if _, err := rbac.RoleBindings(ns).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestGitOpsLiveApplicationRefused: --live with no cluster to reach is an
// error naming the Application and the server; a user who may not list a
// kind the Application renders gets a plan whose notes name it.
func TestGitOpsLiveApplicationRefused(t *testing.T) {
	f := newArgoFixture(t, byLabel)
	c, ns := f.c, f.ns
	prune := "{automated: {prune: true}}"
	base, head := argoSide(t, f.app, f.url, ns, "", prune), argoSide(t, f.app, f.url, ns, "{name: image.tag, value: b}", prune)

	code, stderr := runUnreachable(t, "gitops", base, head, "--live")
	if code != 1 || !strings.Contains(stderr, "Application argocd/store") || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("unreachable cluster: exit %d, want 1 naming the Application and the server\n%s", code, stderr)
	}

	grant(t, c, ns, "no-list",
		rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims"}, Verbs: []string{"get"}})
	_, notes, _ := gitopsPlan(t, c, base, head, "--kube-as-user", "no-list")
	if !strings.Contains(notes, "a LIST was refused") || !strings.Contains(notes, "persistentvolumeclaims") {
		t.Errorf("notes do not name the kind whose LIST was refused:\n%s", notes)
	}
}

// TestGitOpsLiveStorageNamespace: a HelmRelease whose storageNamespace is
// not its targetNamespace, installed as helm-controller installs it (the
// Helm SDK's storage on the storage namespace, its client and the release
// on the target namespace), is planned three-way against that release.
func TestGitOpsLiveStorageNamespace(t *testing.T) {
	c := testcluster.Get(t)
	target, storage := c.Namespace(t), c.Namespace(t)
	demo := filepath.Join(c.Root, "testdata/charts/demo")
	url, _ := chartrepo.Serve(t, demo, filepath.Join(c.Root, "testdata/charts/demo-v2"))

	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &c.Kubeconfig, &target
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, storage, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	cfg.KubeClient.(*kube.Client).Namespace = target
	ch, err := loader.Load(demo)
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = "shop", target
	if _, err := install.Run(ch, map[string]interface{}{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Clientset(t).CoreV1().Secrets(storage).Get(t.Context(), "sh.helm.release.v1.shop.v1", metav1.GetOptions{}); err != nil {
		t.Fatalf("the release record is not in the storage namespace: %v", err)
	}

	side := func(version string) string {
		return filetree.Write(t, map[string]string{
			"source.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: charts, namespace: flux}\nspec: {url: \"" + url + "\"}\n",
			"shop.yaml": "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: shop, namespace: flux}\nspec:\n" +
				"  releaseName: shop\n  targetNamespace: " + target + "\n  storageNamespace: " + storage + "\n" +
				"  chart: {spec: {chart: demo, version: " + version + ", sourceRef: {kind: HelmRepository, name: charts}}}\n",
		})
	}
	p, notes, r := gitopsPlan(t, c, side("1.0.0"), side("2.0.0"))
	if r.Code != 2 || p.Release.Operation != "upgrade" || p.Release.Namespace != target {
		t.Fatalf("exit %d, release %+v: want the blocked upgrade of release shop in %s\n%s", r.Code, p.Release, target, r.Stderr)
	}
	if !strings.Contains(notes, "as stored in namespace "+storage+", three-way with the live objects in namespace "+target) {
		t.Errorf("notes do not say where the release was read:\n%s", notes)
	}
	sts := p.change(t, "StatefulSet", "shop-db")
	if sts.Class != "recreate-required" || len(sts.Reasons) == 0 || sts.Reasons[0].Source != "server" {
		t.Errorf("StatefulSet shop-db: %s %+v: want recreate-required from the server's dry-run", sts.Class, sts.Reasons)
	}

	if code, stderr := runUnreachable(t, "gitops", side("1.0.0"), side("2.0.0"), "--live"); code != 1 || !strings.Contains(stderr, "HelmRelease flux/shop") || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("unreachable cluster: exit %d, want 1 naming the HelmRelease and the server\n%s", code, stderr)
	}
	// A user who may read the release namespace but not Helm's records in
	// the storage namespace is told which.
	grant(t, c, target, "objects-only", rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}})
	r = run(t, c, "gitops", side("1.0.0"), side("2.0.0"), "--live", "--kube-as-user", "objects-only")
	if r.Code != 1 || !strings.Contains(r.Stderr, "secrets") || !strings.Contains(r.Stderr, `reading the history of release "shop" in namespace `+storage+":") {
		t.Errorf("records unreadable: exit %d, want 1 naming secrets and the storage namespace %s\n%s", r.Code, storage, r.Stderr)
	}
}
