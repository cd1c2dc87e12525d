package e2e

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestReleaseNamedLikeACommand: a release named like a command of the tree
// is planned and applied on the real cluster the way it was before there
// were commands (RELEASE CHART, the chart a path) and with the upgrade verb,
// while the recover command still recovers it by name.
func TestReleaseNamedLikeACommand(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	v1 := writeChart(t, "app", "1.0.0", map[string]string{"cm.yaml": configMap(false, "a")})
	v2 := writeChart(t, "app", "2.0.0", map[string]string{"cm.yaml": configMap(false, "b")})
	c.Helm(t, "install", "recover", v1, "-n", ns)

	for _, args := range [][]string{{"recover", v2}, {"upgrade", "recover", v2}} {
		p, r := planJSON(t, c, append(args, "-n", ns)...)
		if r.Code != 0 || p.Release.Name != "recover" || p.Release.Operation != "upgrade" || p.change(t, "ConfigMap", "settings").Action != "update" {
			t.Errorf("%q: exit %d, release %+v, want the upgrade of the release recover updating its ConfigMap\n%s", args, r.Code, p.Release, r.Stderr)
		}
	}
	if r := run(t, c, "recover", v2, "-n", ns, "--no-watch"); r.Code != 0 || !strings.Contains(r.Stdout, "Release recover in namespace "+ns+": revision 1 -> 2") {
		t.Fatalf("applying the release recover: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	cm, err := c.Clientset(t).CoreV1().ConfigMaps(ns).Get(t.Context(), "settings", metav1.GetOptions{})
	if err != nil || cm.Data["mode"] != "b" {
		t.Errorf("the release recover's ConfigMap after the apply: %v, %v; want mode b", cm.Data, err)
	}
	r := run(t, c, "recover", "recover", "-n", ns, "--yes")
	if r.Code != 0 || !strings.Contains(r.Stdout+r.Stderr, `Release "recover" in namespace `+ns+" has no recreate journal: nothing to recover") {
		t.Errorf("recover recover: exit %d, want 0 saying there is nothing to recover\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
}
