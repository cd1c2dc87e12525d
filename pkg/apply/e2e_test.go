package apply_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/helmsdk"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apply"
	tool "github.com/safe-upgrade/helm-safe-upgrade/pkg/cli"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/helmtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/toolproc"
)

func TestMain(m *testing.M) {
	helmsdk.InitProcess() // as main does: some tests run the tool in-process
	testcluster.Main(m)
}

// e2e is one release in a fresh namespace of the real control plane.
type e2e struct {
	c        *testcluster.Cluster
	ns, name string
	chart    string // absolute path of the chart directory
	cfg      *action.Configuration
	settings *cli.EnvSettings
}

func newE2E(t *testing.T, name, chart string) *e2e {
	t.Helper()
	c := testcluster.Get(t)
	e := &e2e{c: c, ns: c.Namespace(t), name: name}
	var err error
	if e.chart, err = filepath.Abs(filepath.Join("testdata", "charts", chart)); err != nil {
		t.Fatal(err)
	}
	getter := genericclioptions.NewConfigFlags(false)
	getter.KubeConfig, getter.Namespace = &c.Kubeconfig, &e.ns
	if e.cfg, err = releasestate.NewConfiguration(getter, e.ns, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	e.settings = cli.New()
	dir := t.TempDir()
	e.settings.RepositoryConfig = filepath.Join(dir, "repositories.yaml")
	e.settings.RepositoryCache = filepath.Join(dir, "cache")
	e.settings.RegistryConfig = filepath.Join(dir, "registry.json")
	e.settings.KubeConfig = c.Kubeconfig
	return e
}

func (e *e2e) options(set ...string) render.Options {
	return render.Options{Namespace: e.ns, Timeout: time.Minute, Values: values.Options{Values: set}}
}

// plan renders the next revision as the plan stage does.
func (e *e2e) plan(t *testing.T, opts render.Options) *render.Result {
	t.Helper()
	res, err := render.Render(t.Context(), e.cfg, e.settings, e.name, e.chart, opts)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return res
}

func (e *e2e) apply(t *testing.T, opts render.Options, rendered *render.Result, force bool, recreate ...plan.Change) (*release.Release, string) {
	t.Helper()
	var out bytes.Buffer
	rel, err := apply.Apply(t.Context(), apply.Request{
		Config: e.cfg, Cluster: e.cluster(t), Settings: e.settings, ReleaseName: e.name, ChartRef: e.chart, Render: opts,
		Rendered: rendered, Recreate: recreate, Force: force, Description: "safe-upgrade: e2e", Log: t.Logf,
		ApplyMethod: rendered.ApplyMethod, // as planned with --server-side=auto
	}, &out)
	if err != nil {
		t.Fatalf("apply: %v\noutput:\n%s", err, out.String())
	}
	return rel, out.String()
}

// cluster is the connection the recreate step uses, from the same kubeconfig
// as the Helm configuration (verb.Config.Connect builds it in the tool).
func (e *e2e) cluster(t *testing.T) *live.Cluster {
	t.Helper()
	rc, err := e.cfg.RESTClientGetter.ToRESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := e.cfg.RESTClientGetter.ToRESTMapper()
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return &live.Cluster{Dynamic: dyn, Mapper: mapper}
}

// plannedObject returns an object of the planned manifest.
func (e *e2e) plannedObject(t *testing.T, m string, id manifest.ObjectID) *unstructured.Unstructured {
	t.Helper()
	set, err := manifest.Split("planned manifest", m, e.ns, manifest.ScoperFunc(
		func(_ schema.GroupVersionKind) (bool, bool, error) { return true, true, nil }))
	if err != nil {
		t.Fatal(err)
	}
	o := set.Get(id)
	if o == nil {
		t.Fatalf("%s is not in the planned manifest", id)
	}
	return o.Obj
}

func TestE2ERecreateStatefulSetKeepsPodsAndPVCs(t *testing.T) {
	t.Parallel()
	e := newE2E(t, "db", "db")
	cs := e.c.Clientset(t)
	e.c.Helm(t, "install", e.name, e.chart, "-n", e.ns)
	sts := e.name + "-db"

	// The controller manager creates the pods and their claims.
	var pods map[string]types.UID
	var claims map[string]types.UID
	testcluster.Eventually(t, "2 pods and 2 PVCs", func() (bool, string) {
		pods, claims = e.c.PodsAndClaims(t, e.ns, "app="+sts)
		return len(pods) == 2 && len(claims) == 2, fmt.Sprintf("pods %v, PVCs %v", pods, claims)
	})
	before, err := cs.AppsV1().StatefulSets(e.ns).Get(t.Context(), sts, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Plain helm cannot make this change.
	out, err := e.c.HelmErr("upgrade", e.name, e.chart, "-n", e.ns, "--set", "storage=2Gi")
	if err == nil {
		t.Fatalf("helm upgrade changed volumeClaimTemplates without error:\n%s", out)
	}
	if !strings.Contains(out, "StatefulSet") || !strings.Contains(out, "volumeClaimTemplates") && !strings.Contains(out, "Forbidden") {
		t.Fatalf("helm upgrade failed for another reason:\n%s", out)
	}
	t.Logf("helm upgrade --set storage=2Gi fails as expected:\n%s", out)

	opts := e.options("storage=2Gi")
	rendered := e.plan(t, opts)
	if rendered.Last.Version != 2 || rendered.Last.Info.Status != release.StatusFailed || rendered.Previous.Version != 1 {
		t.Fatalf("plan: last %d %s, previous %d", rendered.Last.Version, rendered.Last.Info.Status, rendered.Previous.Version)
	}
	change := plan.Change{
		ID:     manifest.ObjectID{Group: "apps", Kind: "StatefulSet", Namespace: e.ns, Name: sts},
		Action: plan.ActionUpdate, Class: plan.ClassRecreateRequired, Destructive: true, Acknowledged: true,
	}
	rel, printed := e.apply(t, opts, rendered, false, change)
	want := fmt.Sprintf("StatefulSet.apps/%s/%s: deleted with --cascade=orphan; its 2 pods and 2 PVCs are kept and adopted by the new StatefulSet", e.ns, sts)
	if !strings.Contains(printed, want) {
		t.Errorf("printed %q, want %q", printed, want)
	}
	if rel.Version != 3 || rel.Info.Status != release.StatusDeployed || rel.Manifest != rendered.Next.Manifest {
		t.Errorf("release: revision %d %s, manifest as planned: %v", rel.Version, rel.Info.Status, rel.Manifest == rendered.Next.Manifest)
	}

	after, err := cs.AppsV1().StatefulSets(e.ns).Get(t.Context(), sts, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.UID == before.UID {
		t.Error("the StatefulSet was not recreated")
	}
	if got := after.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String(); got != "2Gi" {
		t.Errorf("claim template storage = %s, want 2Gi", got)
	}
	// The same pods and claims, adopted by the new StatefulSet.
	testcluster.Eventually(t, "the pods adopted by the new StatefulSet", func() (bool, string) {
		pl, err := cs.CoreV1().Pods(e.ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=" + sts})
		if err != nil {
			t.Fatal(err)
		}
		var owners []string
		adopted := 0
		for _, p := range pl.Items {
			if ref := metav1.GetControllerOf(&p); ref != nil {
				owners = append(owners, p.Name+"→"+string(ref.UID))
				if ref.UID == after.UID {
					adopted++
				}
			}
		}
		return adopted == len(pods), fmt.Sprintf("owners %v, new StatefulSet %s", owners, after.UID)
	})
	podsAfter, claimsAfter := e.c.PodsAndClaims(t, e.ns, "app="+sts)
	if fmt.Sprint(podsAfter) != fmt.Sprint(pods) {
		t.Errorf("pods after %v, before %v", podsAfter, pods)
	}
	if fmt.Sprint(claimsAfter) != fmt.Sprint(claims) {
		t.Errorf("PVCs after %v, before %v", claimsAfter, claims)
	}
	hist := e.c.Helm(t, "history", e.name, "-n", e.ns)
	if !strings.Contains(hist, "safe-upgrade: e2e") {
		t.Errorf("helm history does not show the description:\n%s", hist)
	}
}

// installers install a release with helm v3 (a client-side release) or
// helm v4 (server-side, applied with Helm 4's SDK).
var installers = []struct {
	name string
	helm func(*testcluster.Cluster) func(testing.TB, ...string) string
}{
	{"helm 3", func(c *testcluster.Cluster) func(testing.TB, ...string) string { return c.Helm }},
	{"helm 4", func(c *testcluster.Cluster) func(testing.TB, ...string) string { return c.HelmV4 }},
}

func TestE2ERandomSecretIsThePlannedOne(t *testing.T) {
	for _, in := range installers {
		t.Run(in.name, func(t *testing.T) {
			t.Parallel()
			testRandomSecretIsThePlannedOne(t, in.helm)
		})
	}
}

func testRandomSecretIsThePlannedOne(t *testing.T, helm func(*testcluster.Cluster) func(testing.TB, ...string) string) {
	e := newE2E(t, "app", "rand")
	helm(e.c)(t, "install", e.name, e.chart, "-n", e.ns)

	opts := e.options()
	rendered := e.plan(t, opts)
	secretID := manifest.ObjectID{Kind: "Secret", Namespace: e.ns, Name: "app-password"}
	planned, _, _ := unstructured.NestedString(e.plannedObject(t, rendered.Next.Manifest, secretID).Object, "data", "password")
	again, _, _ := unstructured.NestedString(e.plannedObject(t, e.plan(t, opts).Next.Manifest, secretID).Object, "data", "password")
	if planned == "" || planned == again {
		t.Fatalf("the chart rendered %q then %q: the test proves nothing", planned, again)
	}
	plannedHook := rendered.Next.Hooks[0].Manifest

	e.apply(t, opts, rendered, false)

	cs := e.c.Clientset(t)
	secret, err := cs.CoreV1().Secrets(e.ns).Get(t.Context(), "app-password", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := base64.StdEncoding.EncodeToString(secret.Data["password"]); got != planned {
		t.Errorf("password in the cluster (base64) %s, planned %s", got, planned)
	}
	hook, err := cs.CoreV1().ConfigMaps(e.ns).Get(t.Context(), "app-hook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if token := hook.Data["token"]; !strings.Contains(plannedHook, fmt.Sprintf("token: %q", token)) {
		t.Errorf("hook token in the cluster %q is not the planned one:\n%s", token, plannedHook)
	}
}

func TestE2ENoForceUnlessAsked(t *testing.T) {
	tests := []struct {
		name  string
		force bool
		helm4 bool
	}{
		{name: "without force", force: false},
		{name: "with force", force: true},
		// Server-side apply: no force=true (--force-conflicts) and no PUT.
		{name: "helm 4, without force", helm4: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newE2E(t, "app", "rand")
			if tt.helm4 {
				e.c.HelmV4(t, "install", e.name, e.chart, "-n", e.ns)
			} else {
				e.c.Helm(t, "install", e.name, e.chart, "-n", e.ns)
			}
			opts := e.options("message=changed")
			rendered := e.plan(t, opts)
			start := len(e.c.AuditEvents(t, nil))
			e.apply(t, opts, rendered, tt.force)

			releaseObjects := map[string]bool{"app-config": true, "app-password": true, "app-hook": true}
			var updates, forced []string
			for _, ev := range e.c.AuditEvents(t, nil)[start:] {
				if ev.User != "admin" || ev.ObjectRef.Namespace != e.ns {
					continue
				}
				line := ev.Verb + " " + ev.RequestURI
				if strings.Contains(ev.RequestURI, "force=true") {
					forced = append(forced, line)
				}
				if ev.Verb == "update" && releaseObjects[ev.ObjectRef.Name] {
					updates = append(updates, line)
				}
			}
			sort.Strings(updates)
			if len(forced) > 0 {
				t.Errorf("requests with force=true: %v", forced)
			}
			if tt.force && len(updates) == 0 {
				t.Error("with Force, the audit log shows no PUT of a release object: the check below proves nothing")
			}
			if !tt.force && len(updates) > 0 {
				t.Errorf("without Force, PUTs of release objects: %v", updates)
			}
			t.Logf("PUTs of release objects: %v", updates)
		})
	}
}

// tool runs the command in-process, as a user would, in the test's
// namespace; it returns the exit code and stderr. The rollout is not
// watched (--no-watch): these charts pin their pods to a Node no kubelet
// (nor kwok) runs, so the pvc-protection controller holds their claims, and
// those pods never run by design; test/e2e/rollout_test.go tests the watch.
func (e *e2e) tool(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append(args, "-n", e.ns, "--kubeconfig", e.c.Kubeconfig, "--no-watch")
	code := tool.Execute("helm-safe-upgrade", args, iostreams.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		tool.BuildInfo{Version: "e2e", Commit: "test"})
	t.Logf("safe-upgrade %s: exit %d\n%s", strings.Join(args, " "), code, errOut.String())
	return code, errOut.String()
}

// node creates (once) a Node object for pods to be bound to, so the
// pvc-protection controller holds their claims as in a real cluster.
func (e *e2e) node(t *testing.T) string {
	t.Helper()
	const name = "apply-e2e-node"
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := e.c.Clientset(t).CoreV1().Nodes().Create(t.Context(), n, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return name
}

// assertNoJournal fails when the recreate journal of the release remains.
func (e *e2e) assertNoJournal(t *testing.T) {
	t.Helper()
	_, err := e.c.Clientset(t).CoreV1().Secrets(e.ns).Get(t.Context(), releasestate.JournalName(e.name), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the recreate journal remains: %v", err)
	}
}

// revision returns the status and description of a revision, as Helm's
// history shows them.
func (e *e2e) revision(t *testing.T, version int) (string, string) {
	t.Helper()
	var hist []struct {
		Revision    int    `json:"revision"`
		Status      string `json:"status"`
		Description string `json:"description"`
	}
	if err := json.Unmarshal([]byte(e.c.Helm(t, "history", e.name, "-n", e.ns, "-o", "json")), &hist); err != nil {
		t.Fatal(err)
	}
	for _, h := range hist {
		if h.Revision == version {
			return h.Status, h.Description
		}
	}
	t.Fatalf("no revision %d in %+v", version, hist)
	return "", ""
}

// installDB installs the db chart on a Node and waits for its 2 pods and
// 2 claims; it returns their UIDs.
func (e *e2e) installDB(t *testing.T, node string) (pods, claims map[string]types.UID) {
	t.Helper()
	return e.installDBWith(t, e.c.Helm, node)
}

// installDBWith is installDB with helm v3 (Cluster.Helm) or v4 (HelmV4).
func (e *e2e) installDBWith(t *testing.T, helm func(testing.TB, ...string) string, node string) (pods, claims map[string]types.UID) {
	t.Helper()
	helm(t, "install", e.name, e.chart, "-n", e.ns, "--set", "node="+node)
	testcluster.Eventually(t, "2 pods and 2 PVCs", func() (bool, string) {
		pods, claims = e.c.PodsAndClaims(t, e.ns, "app="+e.name+"-db")
		return len(pods) == 2 && len(claims) == 2, fmt.Sprintf("pods %v, PVCs %v", pods, claims)
	})
	return pods, claims
}

// assertRestored checks that the StatefulSet has its revision-1 spec and
// that the same pods and claims are adopted by it.
func (e *e2e) assertRestored(t *testing.T, pods, claims map[string]types.UID) {
	t.Helper()
	cs := e.c.Clientset(t)
	sts, err := cs.AppsV1().StatefulSets(e.ns).Get(t.Context(), e.name+"-db", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the StatefulSet is missing: %v", err)
	}
	if got := sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String(); got != "1Gi" {
		t.Errorf("claim template storage = %s, want revision 1's 1Gi", got)
	}
	testcluster.Eventually(t, "the pods adopted by the StatefulSet", func() (bool, string) {
		pl, err := cs.CoreV1().Pods(e.ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=" + sts.Name})
		if err != nil {
			t.Fatal(err)
		}
		adopted := 0
		for _, p := range pl.Items {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == sts.UID {
				adopted++
			}
		}
		return adopted == len(pods), fmt.Sprintf("%d of %d adopted", adopted, len(pods))
	})
	podsAfter, claimsAfter := e.c.PodsAndClaims(t, e.ns, "app="+sts.Name)
	if fmt.Sprint(podsAfter) != fmt.Sprint(pods) || fmt.Sprint(claimsAfter) != fmt.Sprint(claims) {
		t.Errorf("pods %v, claims %v; before: %v, %v", podsAfter, claimsAfter, pods, claims)
	}
	e.assertNoJournal(t)
}

// TestE2EFailedUpgradeRestoresStatefulSet: Helm fails after the
// acknowledged orphan delete (a hook the server rejects, the same with
// --atomic, a hook that times out); the StatefulSet is put back with its
// revision-1 spec and adopts its pods and claims, and stderr and helm
// history say what was deleted and restored.
func TestE2EFailedUpgradeRestoresStatefulSet(t *testing.T) {
	tests := []struct {
		name  string
		flags []string
	}{
		{name: "hook rejected", flags: []string{"--set", "hook=reject"}},
		// --atomic waits for readiness, which pods never reach here: a
		// short timeout makes the rollback fail fast, after it created the
		// StatefulSet again.
		{name: "hook rejected, atomic", flags: []string{"--set", "hook=reject", "--atomic", "--timeout", "10s"}},
		{name: "hook times out", flags: []string{"--set", "hook=wait", "--timeout", "8s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newE2E(t, "db", "db")
			node := e.node(t)
			pods, claims := e.installDB(t, node)
			args := append([]string{e.name, e.chart, "--set", "node=" + node, "--set", "storage=2Gi", "--ack-all-destructive"}, tt.flags...)
			code, stderr := e.tool(t, args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1", code)
			}
			sts := "StatefulSet.apps/" + e.ns + "/db-db"
			want := "safe-upgrade deleted " + sts + " for recreation; restored from the recreate journal: " + sts
			for _, w := range []string{want, "pre-upgrade hooks run after the deletes and before Helm creates the objects again: "} {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q", w)
				}
			}
			e.assertRestored(t, pods, claims)
			if status, desc := e.revision(t, 2); status != "failed" || !strings.Contains(desc, want) {
				t.Errorf("revision 2 is %s %q, want failed naming the restore", status, desc)
			}
		})
	}
}

// TestE2EFailedUpgradeRestoresStatefulSetHelm4 is
// TestE2EFailedUpgradeRestoresStatefulSet for a Helm 4 (ssa) release,
// applied with Helm 4's SDK: the StatefulSet is put back after a pre-upgrade
// hook the server rejects, with its field managers, and the failed revision
// says so and still records apply_method ssa; a plain helm4 upgrade then
// succeeds.
func TestE2EFailedUpgradeRestoresStatefulSetHelm4(t *testing.T) {
	t.Parallel()
	e := newE2E(t, "db", "db")
	node := e.node(t)
	pods, claims := e.installDBWith(t, e.c.HelmV4, node)
	code, stderr := e.tool(t, e.name, e.chart, "--set", "node="+node, "--set", "storage=2Gi", "--set", "hook=reject", "--ack-all-destructive")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	sts := "StatefulSet.apps/" + e.ns + "/db-db"
	want := "safe-upgrade deleted " + sts + " for recreation; restored from the recreate journal: " + sts
	for _, w := range []string{want, "pre-upgrade hooks failed", "pre-upgrade hooks run after the deletes and before Helm creates the objects again: "} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr does not say %q", w)
		}
	}
	e.assertRestored(t, pods, claims)
	rec := helmtest.ReadRecord(t, e.c.Clientset(t), e.ns, e.name, 2)
	if rec.Info.Status != "failed" || !strings.Contains(rec.Info.Description, want) || rec.ApplyMethod != "ssa" {
		t.Errorf("revision 2 is %s %q apply_method %q, want failed naming the restore, ssa", rec.Info.Status, rec.Info.Description, rec.ApplyMethod)
	}
	// The restored StatefulSet has its field managers back: Helm 4's next
	// upgrade finds no field owned by the tool and succeeds.
	e.c.HelmV4(t, "upgrade", e.name, e.chart, "-n", e.ns, "--set", "node="+node, "--set", "replicas=3")
}

// TestE2EApplySubprocess is the apply that TestE2EKilledApplyRecovers kills
// with SIGKILL and TestE2EInterruptedApplyRestores stops with SIGTERM; alone
// it does nothing.
func TestE2EApplySubprocess(t *testing.T) { toolproc.Child(t) }

// signalApplyWaitingOnHook starts an acknowledged StatefulSet recreate
// with a pre-upgrade hook that never completes in a subprocess, sends it sig
// once the StatefulSet is deleted and the hook waits, and returns what the
// subprocess printed once it ended.
func (e *e2e) signalApplyWaitingOnHook(t *testing.T, node string, sig os.Signal) string {
	t.Helper()
	cs := e.c.Clientset(t)
	args := []string{e.name, e.chart, "--set", "node=" + node, "--set", "storage=2Gi", "--set", "hook=wait",
		"--ack-all-destructive", "--timeout", "10m", "-n", e.ns, "--kubeconfig", e.c.Kubeconfig}
	child := toolproc.Start(t, "TestE2EApplySubprocess", args...)
	testcluster.Eventually(t, "the StatefulSet deleted and the hook waiting", func() (bool, string) {
		_, stsErr := cs.AppsV1().StatefulSets(e.ns).Get(t.Context(), "db-db", metav1.GetOptions{})
		_, jobErr := cs.BatchV1().Jobs(e.ns).Get(t.Context(), "db-pre-upgrade", metav1.GetOptions{})
		return apierrors.IsNotFound(stsErr) && jobErr == nil, fmt.Sprintf("StatefulSet: %v, hook Job: %v", stsErr, jobErr)
	})
	return child.Stop(t, sig)
}

// TestE2EInterruptedApplyRestores: SIGTERM while Helm waits on a pre-upgrade
// hook, the StatefulSet already deleted: the tool stops Helm, restores the
// StatefulSet, and says so in its error and in helm history.
func TestE2EInterruptedApplyRestores(t *testing.T) {
	t.Parallel()
	e := newE2E(t, "db", "db")
	node := e.node(t)
	pods, claims := e.installDB(t, node)
	out := e.signalApplyWaitingOnHook(t, node, syscall.SIGTERM)
	want := "safe-upgrade deleted StatefulSet.apps/" + e.ns + "/db-db for recreation; restored from the recreate journal: StatefulSet.apps/" + e.ns + "/db-db re-created with its previous spec"
	if !strings.Contains(out, want) || !strings.Contains(out, "safe-upgrade: exit 1") {
		t.Errorf("the interrupted apply did not exit 1 saying %q", want)
	}
	e.assertRestored(t, pods, claims)
	if status, desc := e.revision(t, 2); status != "failed" || !strings.Contains(desc, want) {
		t.Errorf("revision 2 is %s %q, want failed naming the restore", status, desc)
	}
}

// TestE2EKilledApplyRecovers: an apply is killed with SIGKILL while Helm
// waits on a pre-upgrade hook that never completes, the StatefulSet already
// deleted. The next plan exits 1 naming --recover; --recover puts the
// StatefulSet back (pods and claims keep their UIDs) and marks the pending
// revision failed; a plan then passes and an acknowledged apply succeeds.
// For a Helm 4 release the revision marked failed keeps apply_method ssa.
func TestE2EKilledApplyRecovers(t *testing.T) {
	for _, in := range installers {
		t.Run(in.name, func(t *testing.T) {
			t.Parallel()
			testKilledApplyRecovers(t, in.helm, in.name == "helm 4")
		})
	}
}

func testKilledApplyRecovers(t *testing.T, helm func(*testcluster.Cluster) func(testing.TB, ...string) string, ssa bool) {
	e := newE2E(t, "db", "db")
	node := e.node(t)
	pods, claims := e.installDBWith(t, helm(e.c), node)
	e.signalApplyWaitingOnHook(t, node, syscall.SIGKILL)
	if status, _ := e.revision(t, 2); status != "pending-upgrade" {
		t.Fatalf("revision 2 is %s after the kill, want pending-upgrade", status)
	}

	code, stderr := e.tool(t, e.name, e.chart, "--set", "node="+node, "--dry-run")
	if code != 1 || !strings.Contains(stderr, "--recover") || !strings.Contains(stderr, "StatefulSet.apps/"+e.ns+"/db-db") {
		t.Fatalf("plan after the kill: exit %d, want 1 naming --recover and the StatefulSet", code)
	}
	// The killed apply's Lease refuses --recover until it is stale.
	// Its holder ran on this host and was killed: the refusal says so and
	// when the Lease is stale, instead of "is being applied".
	if code, stderr := e.tool(t, e.name, "--recover", "--yes"); code != 1 || !strings.Contains(stderr, "no longer runs") || !strings.Contains(stderr, "stale in") {
		t.Fatalf("--recover while the killed apply's Lease is live: exit %d, want 1 saying its holder no longer runs and when the Lease is stale:\n%s", code, stderr)
	}
	testcluster.Eventually(t, "the killed apply's Lease stale", func() (bool, string) {
		l, err := e.c.Clientset(t).CoordinationV1().Leases(e.ns).Get(t.Context(), releasestate.LeaseName(e.name), metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return time.Since(l.Spec.RenewTime.Time) > releasestate.LeaseDuration, l.Spec.RenewTime.String()
	})
	// Both forms: RELEASE CHART --recover, and RELEASE --recover (a
	// recovery applies no chart).
	recoverArgs := []string{e.name, e.chart, "--recover", "--yes"}
	if ssa {
		recoverArgs = []string{e.name, "--recover", "--yes"}
	}
	code, stderr = e.tool(t, recoverArgs...)
	if code != 0 || !strings.Contains(stderr, "re-created with its previous spec") || !strings.Contains(stderr, "Revision 2 was left pending-upgrade: marked failed") {
		t.Fatalf("--recover: exit %d", code)
	}
	e.assertRestored(t, pods, claims)
	if status, desc := e.revision(t, 2); status != "failed" || !strings.Contains(desc, "interrupted") {
		t.Errorf("revision 2 is %s %q, want failed, saying it was interrupted", status, desc)
	}
	if rec := helmtest.ReadRecord(t, e.c.Clientset(t), e.ns, e.name, 2); ssa && rec.ApplyMethod != "ssa" {
		t.Errorf("revision 2 apply_method %q after --recover, want ssa kept", rec.ApplyMethod)
	}
	if code, _ := e.tool(t, e.name, e.chart, "--set", "node="+node, "--dry-run"); code != 0 {
		t.Errorf("plan after --recover: exit %d, want 0", code)
	}
	if code, _ := e.tool(t, e.name, e.chart, "--set", "node="+node, "--set", "storage=2Gi", "--ack-all-destructive"); code != 0 {
		t.Errorf("acknowledged apply after --recover: exit %d, want 0", code)
	}
	e.assertNoJournal(t)
}

// TestE2EClaimIsNeverRecreated: a claim whose storageClassName changes is
// blocking (plan and --ack-all-destructive apply exit 2) and is left as it
// is; removing the claim, annotated keep, from the chart leaves it in place.
func TestE2EClaimIsNeverRecreated(t *testing.T) {
	t.Parallel()
	e := newE2E(t, "app", "claim")
	node := e.node(t)
	e.c.Helm(t, "install", e.name, e.chart, "-n", e.ns, "--set", "node="+node)
	cs := e.c.Clientset(t)
	claim := func() *corev1.PersistentVolumeClaim {
		t.Helper()
		pvc, err := cs.CoreV1().PersistentVolumeClaims(e.ns).Get(t.Context(), "app-data", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pvc
	}
	before := claim()
	testcluster.Eventually(t, "the claim protected", func() (bool, string) {
		fin := claim().Finalizers
		return len(fin) > 0, fmt.Sprint(fin)
	})

	code, stderr := e.tool(t, e.name, e.chart, "--set", "node="+node, "--set", "class=fast", "--dry-run")
	want := "Refused: PersistentVolumeClaim/" + e.ns + "/app-data cannot be acknowledged"
	if code != 2 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "safe-upgrade never deletes a volume") {
		t.Errorf("plan: exit %d, want 2 with %q and why", code, want)
	}
	if code, _ := e.tool(t, e.name, e.chart, "--set", "node="+node, "--set", "class=fast", "--ack-all-destructive"); code != 2 {
		t.Errorf("apply --ack-all-destructive: exit %d, want 2", code)
	}
	if after := claim(); after.UID != before.UID || after.DeletionTimestamp != nil || *after.Spec.StorageClassName != "standard" {
		t.Errorf("claim after: uid %s (before %s), deletionTimestamp %v, class %s", after.UID, before.UID, after.DeletionTimestamp, *after.Spec.StorageClassName)
	}

	if code, _ := e.tool(t, e.name, e.chart, "--set", "node="+node, "--set", "claim=false"); code != 0 {
		t.Fatalf("removing the kept claim from the chart: exit %d, want 0", code)
	}
	if after := claim(); after.UID != before.UID || after.DeletionTimestamp != nil {
		t.Errorf("kept claim after its removal from the chart: uid %s (before %s), deletionTimestamp %v", after.UID, before.UID, after.DeletionTimestamp)
	}
}

// TestE2EGrowClaims: StatefulSet storage 1Gi → 2Gi with claims bound to
// pre-created PersistentVolumes: after the acknowledged apply a bound claim
// of an expandable StorageClass requests 2Gi; an unbound claim, or one of a
// class that does not allow expansion, keeps 1Gi and the output says why.
func TestE2EGrowClaims(t *testing.T) {
	tests := []struct {
		name         string
		expand       bool
		bound        int // claims bound to a pre-created volume, from ordinal 0
		want0, want1 string
		out          []string
	}{
		{name: "expandable", expand: true, bound: 1, want0: "2Gi", want1: "1Gi", out: []string{
			"/data-db-db-0: request grown from 1Gi to 2Gi", "/data-db-db-1: keeps 1Gi, not grown to 2Gi: it is Pending, not Bound"}},
		{name: "not expandable", bound: 2, want0: "1Gi", want1: "1Gi", out: []string{
			"/data-db-db-0: keeps 1Gi, not grown to 2Gi: its StorageClass", "does not allow volume expansion"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newE2E(t, "db", "db")
			cs := e.c.Clientset(t)
			class := e.ns // StorageClasses and volumes are cluster-wide: named after the namespace
			sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: "kubernetes.io/no-provisioner", AllowVolumeExpansion: &tt.expand}
			if _, err := cs.StorageV1().StorageClasses().Create(t.Context(), sc, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = cs.StorageV1().StorageClasses().Delete(context.Background(), class, metav1.DeleteOptions{})
			})
			for i := 0; i < tt.bound; i++ {
				pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", class, i)}, Spec: corev1.PersistentVolumeSpec{
					Capacity:                      corev1.ResourceList{corev1.ResourceStorage: k8sresource.MustParse("1Gi")},
					AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName:              class,
					PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
					PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + class}},
					ClaimRef:                      &corev1.ObjectReference{Namespace: e.ns, Name: fmt.Sprintf("data-db-db-%d", i)},
				}}
				if _, err := cs.CoreV1().PersistentVolumes().Create(t.Context(), pv, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					_ = cs.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
				})
			}
			e.c.Helm(t, "install", e.name, e.chart, "-n", e.ns, "--set", "class="+class)
			request := func(i int) (string, corev1.PersistentVolumeClaimPhase) {
				pvc, err := cs.CoreV1().PersistentVolumeClaims(e.ns).Get(t.Context(), fmt.Sprintf("data-db-db-%d", i), metav1.GetOptions{})
				if err != nil {
					return err.Error(), ""
				}
				return pvc.Spec.Resources.Requests.Storage().String(), pvc.Status.Phase
			}
			testcluster.Eventually(t, fmt.Sprintf("%d claims bound", tt.bound), func() (bool, string) {
				var phases []string
				n := 0
				for i := 0; i < 2; i++ {
					_, p := request(i)
					phases = append(phases, string(p))
					if p == corev1.ClaimBound {
						n++
					}
				}
				return n == tt.bound, fmt.Sprint(phases)
			})
			code, stderr := e.tool(t, e.name, e.chart, "--set", "class="+class, "--set", "storage=2Gi", "--ack-all-destructive")
			if code != 0 {
				t.Fatalf("exit %d, want 0", code)
			}
			for _, want := range tt.out {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not say %q", want)
				}
			}
			if got0, _ := request(0); got0 != tt.want0 {
				t.Errorf("data-db-db-0 requests %s, want %s", got0, tt.want0)
			}
			if got1, _ := request(1); got1 != tt.want1 {
				t.Errorf("data-db-db-1 requests %s, want %s", got1, tt.want1)
			}
		})
	}
}
