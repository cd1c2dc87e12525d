package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestUninstallGatesDataLoss: uninstalling a release with a templated
// claim (its volume's reclaimPolicy Delete), a StatefulSet with claim
// templates, a kept ConfigMap and a templated CRD with three custom
// resources is blocked (exit 2, nothing written) naming the claim and the
// CRD with its count; acknowledged, Helm uninstalls it, an object held by
// a finalizer is named with it (exit 1), and the last lines list what is
// left: the StatefulSet's claims and the kept ConfigMap.
func TestUninstallGatesDataLoss(t *testing.T) {
	c := testcluster.Get(t)
	c.RequireOwnCluster(t) // a CRD and volumes
	ns := c.Namespace(t)
	cs := c.Clientset(t)
	scratch := ns + "-scratch"
	deleteVolume(t, c, scratch, ns, "scratch")
	boundVolumes(t, c, ns, "data-db-0", "data-db-1")
	c.Helm(t, "install", "app", filepath.Join(c.Root, "testdata/charts/uninstall"), "-n", ns, "--set", "scratchVolume="+scratch)
	waitFor(t, "the claims of the StatefulSet", func() bool {
		_, claims := c.PodsAndClaims(t, ns, "")
		return claims["data-db-0"] != "" && claims["data-db-1"] != ""
	})
	group := ns + ".example.com"
	gadgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gadgets"}
	for i := range 3 {
		g := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Gadget",
			"metadata": map[string]any{"name": fmt.Sprintf("g%d", i)}, "spec": map[string]any{"size": int64(i)}}}
		testcluster.Eventually(t, "a Gadget created (the CRD established)", func() (bool, string) {
			_, err := c.Dynamic(t).Resource(gadgets).Namespace(ns).Create(t.Context(), g, metav1.CreateOptions{})
			return err == nil, fmt.Sprint(err)
		})
	}
	// A finalizer nobody removes: the uninstall's delete leaves it
	// Terminating.
	hold := []byte(`{"metadata":{"finalizers":["example.com/hold"]}}`)
	if _, err := cs.CoreV1().ConfigMaps(ns).Patch(t.Context(), "held", types.MergePatchType, hold, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cs.CoreV1().ConfigMaps(ns).Patch(context.Background(), "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})

	before := auditMark(t, c)
	r := run(t, c, "uninstall", "app", "-n", ns)
	if r.Code != 2 {
		t.Fatalf("unacknowledged uninstall: exit %d, want 2 (blocked)\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{"PersistentVolumeClaim/" + ns + "/scratch", "PersistentVolume " + scratch + " (1Gi) has reclaimPolicy Delete",
		"CustomResourceDefinition.apiextensions.k8s.io/gadgets." + group, "3 existing Gadget resource(s)"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("the blocked plan does not say %q:\n%s", want, r.Stdout)
		}
	}
	assertOnlyDryRunWrites(t, c, ns, before)
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(t.Context(), "scratch", metav1.GetOptions{}); err != nil {
		t.Fatalf("the blocked uninstall deleted the claim: %v", err)
	}

	before = auditMark(t, c)
	p, _ := planJSON(t, c, "uninstall", "app", "-n", ns)
	for _, format := range []string{"markdown", "text"} {
		if r := run(t, c, "uninstall", "app", "-n", ns, "--dry-run", "-o", format); r.Code != 2 || !strings.Contains(r.Stdout, "scratch") || !strings.Contains(r.Stdout, "data-loss") {
			t.Errorf("--dry-run -o %s: exit %d, want 2 and the claim as data-loss\n%s\n%s", format, r.Code, r.Stdout, r.Stderr)
		}
	}
	assertOnlyDryRunWrites(t, c, ns, before)
	if p.Release.Operation != "uninstall" {
		t.Errorf("operation %q, want uninstall", p.Release.Operation)
	}
	acks := p.ackFlags()
	for _, want := range []struct{ kind, name, class string }{
		{"PersistentVolumeClaim", "scratch", "data-loss"},
		{"CustomResourceDefinition", "gadgets." + group, "data-loss"},
		{"StatefulSet", "db", "recreatable"}, // its claims stay
		{"ConfigMap", "held", "recreatable"},
	} {
		ch := p.change(t, want.kind, want.name)
		if ch.Action != "delete" || ch.Class != want.class || ch.Destructive != (want.class == "data-loss") {
			t.Errorf("%s/%s: %+v, want a %s delete", want.kind, want.name, ch, want.class)
		}
	}
	if len(acks) != 4 {
		t.Errorf("acks %q: want the claim's and the CRD's", acks)
	}
	if ch := p.change(t, "ConfigMap", "settings"); ch.Action != "noop" || ch.Destructive {
		t.Errorf("kept ConfigMap: %+v, want a noop", ch)
	}

	r = run(t, c, append([]string{"uninstall", "app", "-n", ns, "-o", "json"}, acks...)...)
	if r.Code != 1 {
		t.Fatalf("acknowledged uninstall with an object held by a finalizer: exit %d, want 1\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	checkUninstalledJSON(t, r.Stdout, "PersistentVolumeClaim/"+ns+"/scratch", "ConfigMap/"+ns+"/held", "example.com/hold", "PersistentVolumeClaim/"+ns+"/data-db-0")
	lines := strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n")
	last := strings.Join(lines[max(0, len(lines)-4):], "\n")
	for _, want := range []string{
		"left behind: PersistentVolumeClaim/" + ns + "/data-db-0 (1Gi)",
		"left behind: PersistentVolumeClaim/" + ns + "/data-db-1 (1Gi)",
		"left behind: ConfigMap/" + ns + "/settings: helm.sh/resource-policy: keep",
	} {
		if !strings.Contains(last, want) {
			t.Errorf("the last lines do not say %q:\n%s", want, last)
		}
	}
	if !strings.Contains(r.Stderr, "not deleted: ConfigMap/"+ns+"/held: Terminating since") || !strings.Contains(r.Stderr, "held by the finalizer(s) example.com/hold") {
		t.Errorf("the held ConfigMap is not named with its finalizer:\n%s", r.Stderr)
	}
	if out, err := c.HelmErr("status", "app", "-n", ns); err == nil {
		t.Errorf("helm status after the uninstall: the release is still there\n%s", out)
	}
	for _, claim := range []string{"data-db-0", "data-db-1"} {
		if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(t.Context(), claim, metav1.GetOptions{}); err != nil {
			t.Errorf("claim %s: %v (helm uninstall leaves the StatefulSet's claims)", claim, err)
		}
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "settings", metav1.GetOptions{}); err != nil {
		t.Errorf("kept ConfigMap: %v", err)
	}
}

// TestUninstallNothingDestructive: a release of recreatable objects only
// uninstalls without acknowledgements, exit 0; its plan is pending
// (--detailed-exitcode 3) but not blocked.
func TestUninstallNothingDestructive(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	c.Helm(t, "install", "web", writeChart(t, "web", "1.0.0", map[string]string{"d.yaml": deployment("web", "nginx:1.25", "RollingUpdate", 1), "cm.yaml": configMap(false, "a")}), "-n", ns)
	if r := run(t, c, "uninstall", "web", "-n", ns, "--dry-run", "--detailed-exitcode"); r.Code != 3 {
		t.Errorf("--dry-run --detailed-exitcode: exit %d, want 3 (deletions the gate lets through)\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	r := run(t, c, "uninstall", "web", "-n", ns)
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if _, err := c.Clientset(t).AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{}); err == nil {
		t.Errorf("the Deployment is still there after the uninstall")
	}
	if strings.Contains(r.Stderr, "left behind") || strings.Contains(r.Stderr, "not deleted") {
		t.Errorf("nothing should be left:\n%s", r.Stderr)
	}
}

// TestUninstallHelm4Release: a release Helm 4 installed (server-side
// apply) is uninstalled the same way.
func TestUninstallHelm4Release(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	c.HelmV4(t, "install", "web", writeChart(t, "web", "1.0.0", map[string]string{"cm.yaml": configMap(false, "a")}), "-n", ns)
	r := run(t, c, "uninstall", "web", "-n", ns)
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if out, err := c.HelmErr("status", "web", "-n", ns); err == nil {
		t.Errorf("helm status after the uninstall: the release is still there\n%s", out)
	}
	if _, err := c.Clientset(t).CoreV1().ConfigMaps(ns).Get(t.Context(), "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the release's ConfigMap after the uninstall: %v, want not found", err)
	}
}

// deleteVolume makes a PersistentVolume named name, reclaimPolicy Delete,
// bound in advance to the claim ns/claim.
func deleteVolume(t *testing.T, c *testcluster.Cluster, name, ns, claim string) {
	t.Helper()
	cs := c.Clientset(t)
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
		PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + name}},
		ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: claim},
	}}
	if _, err := cs.CoreV1().PersistentVolumes().Create(t.Context(), pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().PersistentVolumes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}
