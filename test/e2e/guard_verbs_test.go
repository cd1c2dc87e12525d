package e2e

import (
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/guard"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// guardedStatefulSetUninstall: with the guard in force (TestGuard), the
// tool's uninstall of a release with a StatefulSet (claim templates) and a
// templated claim asks to acknowledge both deletes the guard refuses — the
// StatefulSet's too, whose claims stay — so that, unacknowledged, the gate
// blocks it before the guard is reached (exit 2, nothing written, nothing
// annotated), and, acknowledged, Helm's uninstall passes the guard whole
// and the StatefulSet's claims stay with their UIDs.
func guardedStatefulSetUninstall(t *testing.T, c *testcluster.Cluster) {
	ns := c.Namespace(t)
	boundVolumes(t, c, ns, "data-db-0", "data-db-1")
	chart := writeChart(t, "db", "1.0.0", map[string]string{"sts.yaml": baseSTS.yaml(), "pvc.yaml": guardVolumeChart["pvc.yaml"]})
	c.Helm(t, "install", "db", chart, "-n", ns)
	waitFor(t, "the claims of the StatefulSet", func() bool {
		_, claims := c.PodsAndClaims(t, ns, "")
		return claims["data-db-0"] != "" && claims["data-db-1"] != ""
	})
	_, claims := c.PodsAndClaims(t, ns, "")
	delete(claims, "files") // the templated claim, which the uninstall deletes

	before := auditMark(t, c)
	r := run(t, c, "uninstall", "db", "-n", ns)
	if r.Code != 2 || !strings.Contains(r.Stdout, "refused by the guard unless acknowledged") {
		t.Fatalf("unacknowledged uninstall: exit %d, want 2 (blocked by the gate) naming the guard\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	assertOnlyDryRunWrites(t, c, ns, before)
	for _, obj := range [][]string{{"-n", ns, "pvc", "files"}, {"-n", ns, "sts", "db"}} {
		if got := mustBin(t, c, c.Kubectl, append([]string{"get", "-o", "jsonpath={.metadata.annotations}"}, obj...)...); strings.Contains(got, guard.AckAnnotation) {
			t.Errorf("the blocked uninstall annotated %v: %s", obj, got)
		}
	}

	p, _ := planJSON(t, c, "uninstall", "db", "-n", ns)
	if ch := p.change(t, "StatefulSet", "db"); ch.Action != "delete" || !ch.Destructive || ch.Class != "recreatable" {
		t.Errorf("StatefulSet/db under the guard: %+v, want a destructive recreatable delete", ch)
	}
	acks := destructiveAcks(t, c, 2, "uninstall", "db", "-n", ns)
	// --cascade=orphan: the guard lets the StatefulSet's delete pass, so
	// only the claim is asked for.
	destructiveAcks(t, c, 1, "uninstall", "db", "-n", ns, "--cascade", "orphan")

	r = run(t, c, append([]string{"uninstall", "db", "-n", ns, "--debug"}, acks...)...)
	if r.Code != 0 || !strings.Contains(r.Stderr, "acknowledged to the guard") {
		t.Fatalf("acknowledged uninstall: exit %d, want 0 with the acknowledgement logged\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	gone(t, c, "-n", ns, "sts", "db")
	gone(t, c, "-n", ns, "pvc", "files")
	_, after := c.PodsAndClaims(t, ns, "")
	keptUIDs(t, "PersistentVolumeClaim", claims, after)
	for _, name := range []string{"data-db-0", "data-db-1"} {
		if !strings.Contains(r.Stderr, "left behind: PersistentVolumeClaim/"+ns+"/"+name) {
			t.Errorf("the uninstall does not name the claim %s left behind:\n%s", name, r.Stderr)
		}
	}
}

// guardSurvivesCasualDelete: no policy can refuse the delete of a policy
// or a binding (the API server exempts them), so kubectl deletes them; but
// the guard's finalizer holds both, still in force, until guard uninstall.
// stsNS holds a release's StatefulSet db.
func guardSurvivesCasualDelete(t *testing.T, c *testcluster.Cluster, stsNS string) {
	for _, kind := range []string{"validatingadmissionpolicybinding", "validatingadmissionpolicy"} {
		mustBin(t, c, c.Kubectl, "delete", kind, guard.Name, "--wait=false")
	}
	refused(t, c, "StatefulSet "+stsNS+"/db", "delete", "-n", stsNS, "sts", "db", "--wait=false")
	if r := run(t, c, "guard", "status"); r.Code != 0 || strings.Count(r.Stdout, "still in force") != 2 {
		t.Errorf("guard status of a guard being deleted: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if r := run(t, c, "guard", "install"); r.Code != 1 || !strings.Contains(r.Stderr, "guard uninstall") {
		t.Errorf("guard install over a guard being deleted: exit %d, want 1 naming guard uninstall\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}
