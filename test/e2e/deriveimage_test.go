package e2e

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// imageChart is a chart of three pod controllers whose only difference
// between versions is their container's image, the commonest upgrade.
func imageChart(t *testing.T, image string) string {
	spec := func(name string) string {
		return fmt.Sprintf("  selector: {matchLabels: {app: %[1]s}}\n  template:\n    metadata: {labels: {app: %[1]s}}\n    spec: {containers: [{name: app, image: %[2]q}]}\n", name, image)
	}
	return writeChart(t, "img", "1.0.0", map[string]string{
		"d.yaml":  "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 0\n" + spec("web"),
		"s.yaml":  "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  replicas: 0\n  serviceName: db\n" + spec("db"),
		"ds.yaml": "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent}\nspec:\n" + spec("agent"),
	})
}

// TestImageBumpAskedForServerWarnings (issue 41): an image change is a pod
// template change, and the server answers one with more than the object:
// PodSecurity evaluates the template of every pod controller update and
// warns at the namespace's warn level, which the namespace's labels or the
// API server's own admission configuration (which no client can read) set,
// and the bumped metadata.generation makes the strategy return the pod
// template warnings. So an image bump is asked even with the default
// --server-dry-run=needed: the default plan sends one dry-run per object,
// prints the server's PodSecurity warning, and gives the verdicts of
// --server-dry-run=all.
func TestImageBumpAskedForServerWarnings(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	label := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/warn":"restricted"}}}`)
	if _, err := c.Clientset(t).CoreV1().Namespaces().Patch(context.Background(), ns, types.MergePatchType, label, metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling namespace %s: %v", ns, err)
	}
	c.Helm(t, "install", "img", imageChart(t, "nginx:1.25"), "-n", ns)
	next := imageChart(t, "nginx:1.26")
	objects := []struct{ kind, name, resource string }{
		{"Deployment", "web", "deployments"}, {"StatefulSet", "db", "statefulsets"}, {"DaemonSet", "agent", "daemonsets"},
	}
	plans := map[string]*jsonPlan{}
	for _, mode := range []string{"needed", "all"} {
		before := auditMark(t, c)
		p, r := planJSON(t, c, "img", next, "-n", ns, "--server-dry-run="+mode)
		if r.Code != 0 {
			t.Fatalf("--server-dry-run=%s: exit %d\n%s", mode, r.Code, r.Stderr)
		}
		if !strings.Contains(r.Stderr, `would violate PodSecurity "restricted:latest"`) {
			t.Errorf("--server-dry-run=%s: the server's PodSecurity warning is not printed:\n%s", mode, r.Stderr)
		}
		n := dryRunPatches(t, c, ns, before)
		for _, o := range objects {
			if n[o.resource] != 1 {
				t.Errorf("--server-dry-run=%s: %s/%s: %d dry-run patches, want 1", mode, o.kind, o.name, n[o.resource])
			}
		}
		assertOnlyDryRunWrites(t, c, ns, before)
		plans[mode] = p
	}
	for _, o := range objects {
		d, a := plans["needed"].change(t, o.kind, o.name), plans["all"].change(t, o.kind, o.name)
		if d.Prediction != "server" {
			t.Errorf("%s/%s: prediction %q by default, want server", o.kind, o.name, d.Prediction)
		}
		if d.Action != "update" || d.Class != "rolling" || !hasPathPrefix(d.paths(), "spec.template.spec.containers") {
			t.Errorf("%s/%s: %s %s %v, want a rolling update of the container", o.kind, o.name, d.Action, d.Class, d.paths())
		}
		if !reflect.DeepEqual(d, a) {
			t.Errorf("%s/%s: default and --server-dry-run=all plans differ:\ndefault %+v\nall     %+v", o.kind, o.name, d, a)
		}
	}
}
