package testcluster_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

func TestConfigMapRoundTripAndAudit(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	cms := c.Clientset(t).CoreV1().ConfigMaps(ns)

	want := map[string]string{"greeting": "hello"}
	_, err := cms.Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: want,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "not-written"}},
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}

	// Read back through the dynamic client: what the server stored.
	got, err := c.Dynamic(t).Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).
		Namespace(ns).Get(t.Context(), "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := got.Object["data"].(map[string]any); data["greeting"] != "hello" {
		t.Errorf("read back data %v, want %v", got.Object["data"], want)
	}

	creates := c.AuditEvents(t, func(e testcluster.AuditEvent) bool {
		// The controller manager creates kube-root-ca.crt in every namespace.
		return e.User == "admin" && e.Verb == "create" && e.ObjectRef.Resource == "configmaps" && e.ObjectRef.Namespace == ns
	})
	if len(creates) != 2 {
		t.Fatalf("audit log has %d configmap creates in %s, want 2: %+v", len(creates), ns, creates)
	}
	real, dry := creates[0], creates[1]
	if real.ObjectRef.Name != "settings" || real.ResponseCode != 201 || strings.Contains(real.RequestURI, "dryRun") {
		t.Errorf("create event = %+v, want settings, code 201, no dryRun", real)
	}
	if !strings.Contains(dry.RequestURI, "dryRun=All") {
		t.Errorf("dry-run create event RequestURI = %q, want dryRun=All in it", dry.RequestURI)
	}
	if real.Stage != "ResponseComplete" {
		t.Errorf("stage = %q, want ResponseComplete", real.Stage)
	}
}

func TestDeploymentGetsReplicaSetFromControllerManager(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	cs := c.Clientset(t)

	labels := map[string]string{"app": "web"}
	replicas := int32(2)
	_, err := cs.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27.3"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.27.3" {
		t.Errorf("read back image %q", img)
	}

	deadline := time.Now().Add(60 * time.Second)
	for {
		rss, err := cs.AppsV1().ReplicaSets(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rss.Items) == 1 && metav1.IsControlledBy(&rss.Items[0], d) && *rss.Items[0].Spec.Replicas == replicas {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ReplicaSet with %d replicas controlled by the Deployment after 60s: %d ReplicaSets", replicas, len(rss.Items))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestBinariesMatchTheControlPlane(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	if !strings.HasPrefix(c.ServerVersion, "v1.") {
		t.Errorf("ServerVersion = %q, want a real version (built without -ldflags it is v0.0.0-master)", c.ServerVersion)
	}
	if out := c.Helm(t, "version", "--short"); !strings.HasPrefix(out, "v3.") {
		t.Errorf("helm v3 says %q", out)
	}
	if out := run(t, c, c.Helm4, "version", "--short"); !strings.HasPrefix(out, "v4.") {
		t.Errorf("helm v4 says %q", out)
	}
	if out := run(t, c, c.Kubectl, "version", "--client"); !strings.Contains(out, "Client Version: v1.") {
		t.Errorf("kubectl says %q", out)
	}
}

// TestDemoChartsShowTheProblem installs testdata/charts/demo and upgrades it
// to demo-v2 with plain helm: the StatefulSet's volumeClaimTemplates change
// is rejected, yet the Deployment is already rolled — the half-applied
// upgrade the tool exists to prevent.
func TestDemoChartsShowTheProblem(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	charts := filepath.Join(c.Root, "testdata", "charts")
	c.Helm(t, "install", "demo", filepath.Join(charts, "demo"), "-n", ns)

	cs := c.Clientset(t)
	if _, err := cs.AppsV1().StatefulSets(ns).Get(t.Context(), "demo-db", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := c.HelmErr("upgrade", "demo", filepath.Join(charts, "demo-v2"), "-n", ns)
	if err == nil {
		t.Fatalf("helm upgrade to demo-v2 succeeded, want the StatefulSet change rejected:\n%s", out)
	}
	if !strings.Contains(out, "StatefulSet") || !(strings.Contains(out, "Forbidden") || strings.Contains(out, "immutable")) {
		t.Errorf("helm upgrade output does not name the rejected StatefulSet change:\n%s", out)
	}
	d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), "demo-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.27.4" {
		t.Errorf("after the failed upgrade demo-web runs %q, want nginx:1.27.4 (Helm patches what it can)", img)
	}
}

func run(t *testing.T, c *testcluster.Cluster, bin string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Env = c.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out)
	}
	return string(out)
}
