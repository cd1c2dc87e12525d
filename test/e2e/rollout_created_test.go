package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/helmtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestRolloutFollowsCreatedObjects (issue 39): an upgrade that creates a
// claim bound to a volume made for it, a claim whose StorageClass binds on
// first use (WaitForFirstConsumer: current unbound), a Service, a
// ConfigMap, a Secret and a custom resource: the watch sees each appear
// and the run exits 0. A further upgrade that adds a claim nothing can
// bind (no class, no volume) exits 1 at the watch's timeout, naming that
// claim and no other object.
func TestRolloutFollowsCreatedObjects(t *testing.T) {
	c := testcluster.Get(t)
	c.RequireOwnCluster(t) // a StorageClass, volumes and a CRD
	ns := c.Namespace(t)
	group := ns + ".example.com"
	class := ns + "-on-first-use"
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	classes := c.Clientset(t).StorageV1().StorageClasses()
	if _, err := classes.Create(t.Context(), &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class},
		Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &wffc}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = classes.Delete(t.Context(), class, metav1.DeleteOptions{}) })
	boundVolumes(t, c, ns, "uploads")

	claim := func(name, class string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: %s}\nspec: {storageClassName: %q, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n", name, class)
	}
	v1 := map[string]string{"crds/gadgets.yaml": helmtest.GadgetCRD(group, false), "cm.yaml": configMap(false, "a")}
	c.Helm(t, "install", "app", writeChart(t, "app", "1.0.0", v1), "-n", ns)
	v2 := map[string]string{
		"crds/gadgets.yaml": v1["crds/gadgets.yaml"], "cm.yaml": v1["cm.yaml"],
		"uploads.yaml": claim("uploads", ""),
		"cache.yaml":   claim("cache", class),
		"svc.yaml":     "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {selector: {app: web}, ports: [{port: 80}]}\n",
		"extra.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {a: b}\n",
		"secret.yaml":  "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {password: hunter2}\n",
		"gadget.yaml":  fmt.Sprintf("apiVersion: %s/v1\nkind: Gadget\nmetadata: {name: g}\nspec: {size: 1}\n", group),
	}
	r := run(t, c, "app", writeChart(t, "app", "2.0.0", v2), "-n", ns, "-o", "json")
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0\n%s", r.Code, r.Stderr)
	}
	saysAll(t, "stderr", r.Stderr, "Rollout: 6 of 6 object(s) current",
		"PersistentVolumeClaim/"+ns+"/cache: current: not bound: StorageClass "+class+" binds it when a pod using it is scheduled (WaitForFirstConsumer)")
	var doc outcomeDoc
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || doc.Outcome == nil {
		t.Fatalf("JSON document without outcome (%v):\n%s", err, r.Stdout)
	}
	states := map[string]string{}
	for _, ob := range doc.Outcome.Objects {
		states[ob.Kind+"/"+ob.Name] = ob.State
	}
	for _, want := range []string{"PersistentVolumeClaim/uploads", "PersistentVolumeClaim/cache", "Service/web", "ConfigMap/extra", "Secret/creds", "Gadget/g"} {
		if states[want] != "current" {
			t.Errorf("%s: %q in the outcome, want current (all: %v)", want, states[want], states)
		}
	}
	if strings.Contains(r.Stderr, "not found") {
		t.Errorf("the watch did not see an object it created:\n%s", r.Stderr)
	}

	// A claim that nothing binds: named when the watch times out.
	v3 := map[string]string{"scratch.yaml": claim("scratch", "")}
	for k, v := range v2 {
		v3[k] = v
	}
	r = run(t, c, "app", writeChart(t, "app", "3.0.0", v3), "-n", ns, "--watch-timeout", "10s")
	if r.Code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.Code, r.Stderr)
	}
	saysAll(t, "stderr", r.Stderr, `release "app" revision 3 was applied, but its rollout failed: the watch timed out after `,
		"PersistentVolumeClaim/"+ns+"/scratch in-progress: ",
		"no StorageClass: it binds to a PersistentVolume that matches it, and none has yet")
	failure := r.Stderr[strings.Index(r.Stderr, "its rollout failed"):]
	for _, other := range []string{"uploads", "cache", "Service", "Secret", "Gadget", "ConfigMap"} {
		if strings.Contains(failure, other) {
			t.Errorf("the failure names %s, which is current:\n%s", other, failure)
		}
	}
}
