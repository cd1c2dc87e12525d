package e2e

import (
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestStatefulSetClaimsDeletedWithIt: a StatefulSet whose claims are
// deleted with it (whenDeleted: Delete), removed from the chart, is
// destructive and names the claims that exist.
func TestStatefulSetClaimsDeletedWithIt(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	sts := strings.Replace(baseSTS.yaml(), "  replicas: 2\n", "  replicas: 2\n  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete}\n", 1)
	c.Helm(t, "install", "app", writeChart(t, "app", "1.0.0", map[string]string{"sts.yaml": sts, "cm.yaml": configMap(false, "a")}), "-n", ns)
	waitFor(t, "the claim of pod db-0", func() bool { _, claims := c.PodsAndClaims(t, ns, ""); return claims["data-db-0"] != "" })

	p, r := planJSON(t, c, "app", writeChart(t, "app", "2.0.0", map[string]string{"cm.yaml": configMap(false, "a")}), "-n", ns)
	if r.Code != 2 {
		t.Errorf("exit %d, want 2 (blocked)\n%s", r.Code, r.Stderr)
	}
	ch := p.change(t, "StatefulSet", "db")
	if ch.Action != "delete" || !ch.Destructive {
		t.Fatalf("StatefulSet db: %+v, want a destructive delete", ch)
	}
	found := false
	for _, reason := range ch.Reasons {
		found = found || reason.Path == "spec.persistentVolumeClaimRetentionPolicy.whenDeleted" &&
			strings.Contains(reason.Message, "are deleted with it") && strings.Contains(reason.Message, "data-db-0")
	}
	if !found {
		t.Errorf("no reason naming the claim data-db-0: %+v", ch.Reasons)
	}
}

// TestRolloutUnderExhaustedBudget: a Deployment whose pods a
// PodDisruptionBudget covers with 0 disruptions allowed (minAvailable 1 of
// 1 replica, healthy or not) says so in its rollout notes, and says what it does: it
// does not block the rollout (controllers delete pods, the eviction API is
// not involved), it blocks evictions such as node drains meanwhile.
func TestRolloutUnderExhaustedBudget(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	pdb := "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web}\nspec:\n  minAvailable: 1\n  selector: {matchLabels: {app: web}}\n"
	c.Helm(t, "install", "app", writeChart(t, "app", "1.0.0", map[string]string{"d.yaml": deployment("web", "nginx:1.25", "RollingUpdate", 1), "pdb.yaml": pdb}), "-n", ns)
	p, _ := planJSON(t, c, "app", writeChart(t, "app", "1.1.0", map[string]string{"d.yaml": deployment("web", "nginx:1.26", "RollingUpdate", 1), "pdb.yaml": pdb}), "-n", ns)
	ch := p.change(t, "Deployment", "web")
	notes := strings.Join(ch.Notes, "\n")
	if ch.Class != "rolling" || !strings.Contains(notes, "PodDisruptionBudget web covers these pods and allows 0 disruption(s) now: the rollout itself is not blocked by it") ||
		!strings.Contains(notes, "a node drain during the rollout waits") || strings.Contains(notes, "stall") {
		t.Errorf("Deployment web: class %s notes %q", ch.Class, ch.Notes)
	}
}
