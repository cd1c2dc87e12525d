package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

type stsSpec struct {
	size, label, service, strategy, image string
}

func (s stsSpec) yaml() string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  serviceName: %s
  selector: {matchLabels: {app: %s}}
  updateStrategy: {type: %s}
  template:
    metadata: {labels: {app: %s}}
    spec: {containers: [{name: db, image: "%s"}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: %s}}}
`, s.service, s.label, s.strategy, s.label, s.image, s.size)
}

var baseSTS = stsSpec{size: "1Gi", label: "db", service: "db", strategy: "RollingUpdate", image: "postgres:16.1"}

func deployment(label, image, strategy string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: %d
  strategy: {type: %s}
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec: {containers: [{name: web, image: "%s"}]}
`, replicas, strategy, label, label, image)
}

func configMap(immutable bool, value string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\nimmutable: %v\ndata: {mode: %q}\n", immutable, value)
}

func service(clusterIP string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: api}\nspec:\n  clusterIP: %s\n  selector: {app: api}\n  ports: [{port: 80}]\n", clusterIP)
}

func job(image string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: "%s"}]
`, image)
}

func pvc(size string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: %s}}\n", size)
}

func roleBinding(role string) string {
	return fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: readers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %s}
subjects: [{kind: ServiceAccount, name: default}]
`, role)
}

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
`

func widget(size int) string {
	return fmt.Sprintf("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: gadget}\nspec: {size: %d}\n", size)
}

// planCase is one row of issue #3's acceptance table: install v1 with the
// real helm, optionally disturb the live state, plan v2 and check the verdict.
type planCase struct {
	name   string
	v1, v2 map[string]string
	setup  func(t *testing.T, c *testcluster.Cluster, ns string)
	kind   string
	object string
	action string
	class  string
	// destructive is the expected flag; paths are prefixes that must each
	// start some reason path.
	destructive bool
	paths       []string
	impact      string
	driftPath   string
	// clusterWide cases leave cluster-scoped objects (CRDs) behind: not run
	// on a user's cluster.
	clusterWide bool
}

func planCases() []planCase {
	sts := func(s stsSpec) map[string]string { return map[string]string{"sts.yaml": s.yaml()} }
	with := func(f func(*stsSpec)) stsSpec { s := baseSTS; f(&s); return s }
	one := func(file, content string) map[string]string { return map[string]string{file: content} }
	return []planCase{
		{name: "statefulset volumeClaimTemplates storage", v1: sts(baseSTS), v2: sts(with(func(s *stsSpec) { s.size = "2Gi" })),
			kind: "StatefulSet", object: "db", action: "update", class: "recreate-required", destructive: true,
			paths: []string{"spec.volumeClaimTemplates[0].spec.resources.requests.storage"}},
		{name: "statefulset selector", v1: sts(baseSTS), v2: sts(with(func(s *stsSpec) { s.label = "db2" })),
			kind: "StatefulSet", object: "db", action: "update", class: "recreate-required", destructive: true,
			paths: []string{"spec.selector.matchLabels.app"}},
		{name: "statefulset serviceName", v1: sts(baseSTS), v2: sts(with(func(s *stsSpec) { s.service = "db-headless" })),
			kind: "StatefulSet", object: "db", action: "update", class: "recreate-required", destructive: true,
			paths: []string{"spec.serviceName"}},
		{name: "deployment selector", v1: one("d.yaml", deployment("web", "nginx:1.25", "RollingUpdate", 2)), v2: one("d.yaml", deployment("web2", "nginx:1.25", "RollingUpdate", 2)),
			kind: "Deployment", object: "web", action: "update", class: "recreate-required", destructive: true,
			paths: []string{"spec.selector.matchLabels.app"}},
		{name: "service clusterIP", v1: one("s.yaml", service("10.96.200.10")), v2: one("s.yaml", service("10.96.200.11")),
			kind: "Service", object: "api", action: "update", class: "recreate-required", destructive: true,
			paths: []string{"spec.clusterIP"}},
		{name: "job template", v1: one("j.yaml", job("busybox:1.36")), v2: one("j.yaml", job("busybox:1.37")),
			kind: "Job", object: "migrate", action: "update", class: "recreate-required", destructive: true,
			paths: []string{"spec.template"}},
		{name: "pvc shrink", v1: one("p.yaml", pvc("2Gi")), v2: one("p.yaml", pvc("1Gi")),
			kind: "PersistentVolumeClaim", object: "data", action: "update", class: "recreate-required", destructive: true,
			paths: []string{"spec.resources.requests.storage"}},
		{name: "rolebinding roleRef", v1: one("rb.yaml", roleBinding("view")), v2: one("rb.yaml", roleBinding("edit")),
			kind: "RoleBinding", object: "readers", action: "update", class: "recreate-required", destructive: true,
			paths: []string{"roleRef.name"}},
		{name: "immutable configmap data", v1: one("cm.yaml", configMap(true, "a")), v2: one("cm.yaml", configMap(true, "b")),
			kind: "ConfigMap", object: "settings", action: "update", class: "recreate-required", destructive: true,
			paths: []string{"data.mode"}},
		{name: "template labels no longer match the selector (the seed report)", v1: one("d.yaml", deployment("web", "nginx:1.25", "RollingUpdate", 2)),
			v2:   one("d.yaml", strings.Replace(deployment("web", "nginx:1.25", "RollingUpdate", 2), "metadata: {labels: {app: web}}", "metadata: {labels: {app: web-green}}", 1)),
			kind: "Deployment", object: "web", action: "update", class: "invalid", destructive: true,
			paths: []string{"spec.template.metadata.labels"}},
		{name: "deployment image", v1: one("d.yaml", deployment("web", "nginx:1.25", "RollingUpdate", 3)), v2: one("d.yaml", deployment("web", "nginx:1.26", "RollingUpdate", 3)),
			kind: "Deployment", object: "web", action: "update", class: "rolling",
			paths: []string{"spec.template.spec.containers[0].image"}, impact: "3 pod(s) replaced gradually"},
		{name: "statefulset OnDelete template", v1: sts(with(func(s *stsSpec) { s.strategy = "OnDelete" })), v2: sts(with(func(s *stsSpec) { s.strategy = "OnDelete"; s.image = "postgres:16.2" })),
			kind: "StatefulSet", object: "db", action: "update", class: "rolling",
			paths: []string{"spec.template.spec.containers[0].image"}, impact: "OnDelete"},
		{name: "deployment Recreate strategy", v1: one("d.yaml", deployment("web", "nginx:1.25", "Recreate", 2)), v2: one("d.yaml", deployment("web", "nginx:1.26", "Recreate", 2)),
			kind: "Deployment", object: "web", action: "update", class: "rolling",
			paths: []string{"spec.template.spec.containers[0].image"}, impact: "stopped before new ones start"},
		{name: "replicas only", v1: one("d.yaml", deployment("web", "nginx:1.25", "RollingUpdate", 2)), v2: one("d.yaml", deployment("web", "nginx:1.25", "RollingUpdate", 4)),
			kind: "Deployment", object: "web", action: "update", class: "in-place", paths: []string{"spec.replicas"}},
		{name: "configmap data", v1: one("cm.yaml", configMap(false, "a")), v2: one("cm.yaml", configMap(false, "b")),
			kind: "ConfigMap", object: "settings", action: "update", class: "in-place", paths: []string{"data.mode"}},
		{name: "pvc removed from the chart", v1: map[string]string{"p.yaml": pvc("1Gi"), "cm.yaml": configMap(false, "a")}, v2: one("cm.yaml", configMap(false, "a")),
			kind: "PersistentVolumeClaim", object: "data", action: "delete", destructive: true},
		{name: "custom resource", clusterWide: true, v1: map[string]string{"crds/widget.yaml": widgetCRD, "w.yaml": widget(1)}, v2: map[string]string{"crds/widget.yaml": widgetCRD, "w.yaml": widget(2)},
			kind: "Widget", object: "gadget", action: "update", class: "in-place", paths: []string{"spec.size"}},
		{name: "drift reverted", v1: one("d.yaml", deployment("web", "nginx:1.25", "RollingUpdate", 2)), v2: one("d.yaml", deployment("web", "nginx:1.25", "RollingUpdate", 2)),
			setup: func(t *testing.T, c *testcluster.Cluster, ns string) {
				// An HPA or `kubectl scale` changes replicas behind Helm's back.
				deployments := c.Clientset(t).AppsV1().Deployments(ns)
				err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
					scale, err := deployments.GetScale(t.Context(), "web", metav1.GetOptions{})
					if err != nil {
						return err
					}
					scale.Spec.Replicas = 5
					_, err = deployments.UpdateScale(t.Context(), "web", scale, metav1.UpdateOptions{})
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			},
			kind: "Deployment", object: "web", action: "update", class: "in-place", paths: []string{"spec.replicas"}, driftPath: "spec.replicas"},
	}
}

func TestPlanVerdicts(t *testing.T) {
	c := testcluster.Get(t)
	// make test runs this table on two Kubernetes minors (KUBE_VERSION).
	if want := os.Getenv("KUBE_VERSION"); want != "" && c.ServerVersion != want {
		t.Fatalf("KUBE_VERSION=%s but the API server is %s", want, c.ServerVersion)
	}
	t.Logf("API server %s", c.ServerVersion)
	forEachPlanCase(t, c, func(t *testing.T, tc planCase, ns string) {
		c.Helm(t, "install", "app", writeChart(t, "app", "1.0.0", tc.v1), "-n", ns)
		if tc.setup != nil {
			tc.setup(t, c, ns)
		}
		before := auditMark(t, c)
		p, r := planJSON(t, c, "app", writeChart(t, "app", "2.0.0", tc.v2), "-n", ns)
		got := p.change(t, tc.kind, tc.object)
		if got.Action != tc.action || got.Class != tc.class || got.Destructive != tc.destructive {
			t.Fatalf("%s/%s: got action=%s class=%s destructive=%v, want %s %s %v\nreasons: %+v\nstderr:\n%s",
				tc.kind, tc.object, got.Action, got.Class, got.Destructive, tc.action, tc.class, tc.destructive, got.Reasons, r.Stderr)
		}
		for _, want := range tc.paths {
			if !hasPathPrefix(got.paths(), want) {
				t.Errorf("reason paths %q: none starts with %q (reasons %+v)", got.paths(), want, got.Reasons)
			}
		}
		if tc.destructive && got.Fingerprint == "" {
			t.Errorf("destructive change without a fingerprint")
		}
		if tc.impact != "" && (got.Rollout == nil || !strings.Contains(got.Rollout.Impact, tc.impact)) {
			t.Errorf("rollout = %+v, want impact containing %q", got.Rollout, tc.impact)
		}
		if tc.driftPath != "" && !driftReverted(got, tc.driftPath) {
			t.Errorf("drift = %+v, want %s reverted", got.Drift, tc.driftPath)
		}
		wantCode := 0
		if tc.destructive {
			wantCode = 2
		}
		if r.Code != wantCode {
			t.Errorf("exit code %d, want %d\nstderr:\n%s", r.Code, wantCode, r.Stderr)
		}
		assertOnlyDryRunWrites(t, c, ns, before)
	})
}

// forEachPlanCase runs body for each row of the verdict table, in parallel,
// each in a namespace of its own.
func forEachPlanCase(t *testing.T, c *testcluster.Cluster, body func(t *testing.T, tc planCase, ns string)) {
	for _, tc := range planCases() {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			if tc.clusterWide {
				c.RequireOwnCluster(t)
			}
			body(t, tc, c.Namespace(t))
		})
	}
}

// auditMark is where the audit log stands now, for assertOnlyDryRunWrites;
// 0 on a user's cluster, which has none for us to read.
func auditMark(t *testing.T, c *testcluster.Cluster) int {
	if c.UserCluster {
		return 0
	}
	return len(c.AuditEvents(t, nil))
}

func hasPathPrefix(paths []string, prefix string) bool {
	for _, p := range paths {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

func driftReverted(c jsonChange, path string) bool {
	for _, d := range c.Drift {
		if d.Path == path && d.Reverted {
			return true
		}
	}
	return false
}

// assertOnlyDryRunWrites proves from the API server's audit log that the
// tool sent no write without dryRun=All since event index before, to
// namespace ns or to cluster-scoped objects (other tests apply to their own
// namespaces meanwhile).
func assertOnlyDryRunWrites(t *testing.T, c *testcluster.Cluster, ns string, before int) {
	t.Helper()
	if c.UserCluster {
		t.Log("not checked on your cluster: it needs the API server's audit log")
		return
	}
	events := c.AuditEvents(t, nil)
	sawTool := false
	for _, e := range events[before:] {
		if !strings.HasPrefix(e.UserAgent, "helm-safe-upgrade/") || (e.ObjectRef.Namespace != "" && e.ObjectRef.Namespace != ns) {
			continue
		}
		sawTool = true
		switch e.Verb {
		case "get", "list", "watch":
			continue
		}
		if reviewOnly(e.ObjectRef.Resource) {
			// A review is a question the server answers without storing
			// anything; these are cluster-wide, so another test's apply
			// (its lease check, its "who am I") shows here too.
			continue
		}
		if !strings.Contains(e.RequestURI, "dryRun=All") {
			t.Errorf("plan mode sent a write without dryRun=All: %s %s", e.Verb, e.RequestURI)
		}
	}
	if !sawTool {
		t.Errorf("no request of the tool in the audit log: the user agent is not set, or the check cannot fail")
	}
}

// reviewOnly tells the resources whose create only asks the server a
// question (authentication and authorization reviews) and stores nothing.
func reviewOnly(resource string) bool {
	switch resource {
	case "selfsubjectreviews", "selfsubjectaccessreviews", "selfsubjectrulesreviews", "subjectaccessreviews", "tokenreviews":
		return true
	}
	return false
}

func TestInstallWhenReleaseDoesNotExist(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	chart := writeChart(t, "fresh", "1.0.0", map[string]string{
		"cm.yaml": configMap(false, "a"), "d.yaml": deployment("web", "nginx:1.25", "RollingUpdate", 1), "s.yaml": service(""),
	})
	p, r := planJSON(t, c, "fresh", chart, "-n", ns, "--install")
	if r.Code != 0 {
		t.Fatalf("exit %d\n%s", r.Code, r.Stderr)
	}
	if len(p.Changes) != 3 || p.Summary["create"] != 3 {
		t.Fatalf("want 3 creates, got summary %v changes %+v", p.Summary, p.Changes)
	}
	if p.Release.Operation != "install" {
		t.Errorf("release.operation %q, want install", p.Release.Operation)
	}
	for _, ch := range p.Changes {
		if ch.Action != "create" {
			t.Errorf("%s/%s: action %s, want create", ch.Kind, ch.Name, ch.Action)
		}
	}
	r = run(t, c, "fresh", chart, "-n", ns, "--dry-run")
	if r.Code != 1 || !strings.Contains(r.Stderr, "fresh") || !strings.Contains(r.Stderr, "--install") {
		t.Fatalf("without --install: want exit 1 naming the release and --install, got %d\n%s", r.Code, r.Stderr)
	}
}

// TestPlanManyObjectsOfOneKind covers the LIST path of live reads: with many
// objects of one kind in a namespace the planner lists instead of getting.
func TestPlanManyObjectsOfOneKind(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	maps := func(from, to int, changed int) map[string]string {
		out := map[string]string{}
		for i := from; i < to; i++ {
			value := "a"
			if i == changed {
				value = "b"
			}
			out[fmt.Sprintf("cm%d.yaml", i)] = strings.Replace(configMap(false, value), "name: settings", fmt.Sprintf("name: settings-%d", i), 1)
		}
		return out
	}
	c.Helm(t, "install", "app", writeChart(t, "app", "1.0.0", maps(0, 12, -1)), "-n", ns)
	p, r := planJSON(t, c, "app", writeChart(t, "app", "2.0.0", maps(1, 13, 5)), "-n", ns)
	want := map[string]string{"settings-0": "delete", "settings-5": "update", "settings-12": "create", "settings-7": "noop"}
	for name, action := range want {
		if got := p.change(t, "ConfigMap", name); got.Action != action {
			t.Errorf("%s: action %s, want %s\n%s", name, got.Action, action, r.Stderr)
		}
	}
}

// TestInstallCreatesNamespace: --install --create-namespace applies an
// install into a namespace that does not exist yet, as helm does.
func TestInstallCreatesNamespace(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t) + "-new"
	t.Cleanup(func() {
		_ = c.Clientset(t).CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	chart := writeChart(t, "fresh", "1.0.0", map[string]string{"cm.yaml": configMap(false, "a")})
	r := run(t, c, "fresh", chart, "-n", ns, "--install", "--create-namespace")
	if r.Code != 0 {
		t.Fatalf("exit %d\n%s", r.Code, r.Stderr)
	}
	if _, err := c.Clientset(t).CoreV1().ConfigMaps(ns).Get(t.Context(), "settings", metav1.GetOptions{}); err != nil {
		t.Fatalf("installed ConfigMap: %v", err)
	}
}

// TestPlanWithReadOnlyRBAC: a user who may read but not patch gets catalogue
// verdicts, each saying so; a user who may not even read gets an error that
// names the refused verb and resource.
func TestPlanWithReadOnlyRBAC(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	c.Helm(t, "install", "app", writeChart(t, "app", "1.0.0", map[string]string{"sts.yaml": baseSTS.yaml()}), "-n", ns)
	bigger := baseSTS
	bigger.size = "2Gi"
	v2 := writeChart(t, "app", "2.0.0", map[string]string{"sts.yaml": bigger.yaml()})

	rbac := c.Clientset(t).RbacV1()
	grant := func(user string, resources ...string) {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"", "apps"}, Resources: resources, Verbs: []string{"get", "list", "watch"}}}}
		if _, err := rbac.Roles(ns).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: user},
			Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
		if _, err := rbac.RoleBindings(ns).Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	grant("reader", "secrets", "statefulsets")
	grant("secrets-only", "secrets")

	p, r := planJSON(t, c, "app", v2, "-n", ns, "--kube-as-user", "reader")
	got := p.change(t, "StatefulSet", "db")
	if got.Class != "recreate-required" || !got.Destructive || len(got.Reasons) == 0 || got.Reasons[0].Source != "catalogue" ||
		!hasPathPrefix(got.paths(), "spec.volumeClaimTemplates[0].spec.resources.requests.storage") {
		t.Fatalf("read-only user: want a catalogue recreate-required verdict, got %+v\n%s", got, r.Stderr)
	}
	if len(got.Notes) == 0 || !strings.Contains(got.Notes[0], "RBAC forbids a dry-run patch") {
		t.Errorf("the verdict does not say why it comes from the catalogue: %q", got.Notes)
	}

	r = run(t, c, "app", v2, "-n", ns, "--kube-as-user", "secrets-only", "--dry-run")
	if r.Code != 1 || !strings.Contains(r.Stderr, "forbidden: cannot get statefulsets.apps") {
		t.Fatalf("no read access: want exit 1 naming get statefulsets.apps, got %d\n%s", r.Code, r.Stderr)
	}
}

// TestReleaseRecordTooLarge: values that make the release record larger than
// a Secret holds pass Helm's render, then fail when Helm stores the revision;
// the plan says so and the gate blocks, whatever is acknowledged.
func TestReleaseRecordTooLarge(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	chart := writeChart(t, "app", "1.0.0", map[string]string{"cm.yaml": configMap(false, "a")})
	c.Helm(t, "install", "app", chart, "-n", ns)
	noise := make([]byte, 900<<10) // incompressible once gzipped
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	values := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(values, []byte("blob: "+base64.StdEncoding.EncodeToString(noise)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--dry-run"}, {"--ack-all-destructive"}} {
		r := run(t, c, append([]string{"app", chart, "-n", ns, "-f", values}, args...)...)
		if r.Code != 2 || !strings.Contains(r.Stderr, "the release record Helm would store for revision 2") {
			t.Fatalf("%v: want exit 2 naming the release record, got %d\n%s", args, r.Code, r.Stderr)
		}
	}
	if out, err := c.HelmErr("upgrade", "app", chart, "-n", ns, "-f", values); err == nil {
		t.Fatalf("helm upgrade stored the large record after all, the check is wrong:\n%s", out)
	}
}
