package apply_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/testcluster"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apply"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

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
	if e.cfg, err = render.NewConfiguration(getter, e.ns, "secret", t.Logf); err != nil {
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
	}, &out)
	if err != nil {
		t.Fatalf("apply: %v\noutput:\n%s", err, out.String())
	}
	return rel, out.String()
}

// cluster is the connection the recreate step uses, from the same kubeconfig
// as the Helm configuration (upgrade.Config.Connect builds it in the tool).
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

// eventually polls cond every 200ms for up to a minute.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 1m, still not %s: %s", what, state)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// podsAndClaims returns the UIDs, by name, of the pods matching selector
// and of all PVCs in the namespace.
func (e *e2e) podsAndClaims(t *testing.T, selector string) (pods, claims map[string]types.UID) {
	t.Helper()
	cs := e.c.Clientset(t)
	pl, err := cs.CoreV1().Pods(e.ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := cs.CoreV1().PersistentVolumeClaims(e.ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, claims = map[string]types.UID{}, map[string]types.UID{}
	for _, p := range pl.Items {
		pods[p.Name] = p.UID
	}
	for _, c := range cl.Items {
		claims[c.Name] = c.UID
	}
	return pods, claims
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
	eventually(t, "2 pods and 2 PVCs", func() (bool, string) {
		pods, claims = e.podsAndClaims(t, "app="+sts)
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
	want := fmt.Sprintf("StatefulSet/%s/%s: deleted with --cascade=orphan; its 2 pods and 2 PVCs are kept and adopted by the new StatefulSet", e.ns, sts)
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
	eventually(t, "the pods adopted by the new StatefulSet", func() (bool, string) {
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
	podsAfter, claimsAfter := e.podsAndClaims(t, "app="+sts)
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

func TestE2ERandomSecretIsThePlannedOne(t *testing.T) {
	t.Parallel()
	e := newE2E(t, "app", "rand")
	e.c.Helm(t, "install", e.name, e.chart, "-n", e.ns)

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
	}{
		{name: "without force", force: false},
		{name: "with force", force: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newE2E(t, "app", "rand")
			e.c.Helm(t, "install", e.name, e.chart, "-n", e.ns)
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
