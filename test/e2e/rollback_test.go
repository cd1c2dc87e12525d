package e2e

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// scratchClaim is a PersistentVolumeClaim the chart templates (Helm
// deletes it with the release, or when a revision lacks it).
const scratchClaim = `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: scratch}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`

// TestRollbackPlanGateApply: revision 2 of a release added a templated
// claim (bound to a volume whose reclaim policy deletes it) and grew its
// StatefulSet's claim template (applied by the tool's safe recreate).
// Rolling back to revision 1 deletes the claim, with its data, and shrinks
// the template back, an immutable field: the plan says both, the gate
// blocks without a write, and acknowledged, Helm's rollback runs (history
// "Rollback to 1") after the StatefulSet's safe recreate, which keeps its
// pods and claims.
func TestRollbackPlanGateApply(t *testing.T) {
	c := testcluster.Get(t)
	ns, _ := stsRelease(t, c)
	boundVolumesReclaimed(t, c, ns, corev1.PersistentVolumeReclaimDelete, "scratch")
	bigger := baseSTS
	bigger.size = "2Gi"
	v2 := writeChart(t, "app", "2.0.0", map[string]string{"sts.yaml": bigger.yaml(), "pvc.yaml": scratchClaim})
	if r := run(t, c, "app", v2, "-n", ns, "--ack", "StatefulSet/db"); r.Code != 0 {
		t.Fatalf("upgrade to revision 2: exit %d\n%s", r.Code, r.Stderr)
	}
	waitFor(t, "claim scratch bound", func() bool {
		pvc, err := c.Clientset(t).CoreV1().PersistentVolumeClaims(ns).Get(t.Context(), "scratch", metav1.GetOptions{})
		return err == nil && pvc.Status.Phase == corev1.ClaimBound
	})

	// From here until the acknowledged run, nothing is written: the
	// dry-runs plan only, the run without acknowledgements is blocked.
	before := len(c.AuditEvents(t, nil))
	p, r := planJSON(t, c, "rollback", "app", "1", "-n", ns)
	if r.Code != 2 || p.Release.Operation != "rollback" || p.Release.Revision != 3 {
		t.Fatalf("rollback --dry-run: exit %d, operation %q, revision %d; want 2, rollback, 3\n%s", r.Code, p.Release.Operation, p.Release.Revision, r.Stderr)
	}
	claim := p.change(t, "PersistentVolumeClaim", "scratch")
	var why []string
	for _, reason := range claim.Reasons {
		why = append(why, reason.Message)
	}
	if claim.Action != "delete" || !claim.Destructive || claim.Acknowledged || claim.Blocking {
		t.Errorf("claim scratch: %s, destructive %v, acknowledged %v, blocking %v; want a destructive delete to acknowledge", claim.Action, claim.Destructive, claim.Acknowledged, claim.Blocking)
	}
	saysAll(t, "the claim's reasons", strings.Join(why, "\n"), "not in the revision rolled back to: Helm deletes it",
		"PersistentVolume "+ns+"-scratch (1Gi) has reclaimPolicy Delete: its storage and data are deleted")
	if sts := p.change(t, "StatefulSet", "db"); sts.Class != "recreate-required" || !sts.Destructive || sts.Acknowledged {
		t.Errorf("StatefulSet db: class %s, destructive %v, acknowledged %v; want a recreate-required to acknowledge", sts.Class, sts.Destructive, sts.Acknowledged)
	}
	text := run(t, c, "rollback", "app", "1", "-n", ns, "--dry-run")
	saysAll(t, "the text plan", text.Stdout, "revision 2 -> 3 (rollback to revision 1)", "PersistentVolumeClaim", "scratch", "(1Gi) has reclaimPolicy Delete", "recreate-required")

	blocked := run(t, c, "rollback", "app", "1", "-n", ns)
	if blocked.Code != 2 {
		t.Fatalf("rollback without acks: exit %d, want 2\n%s", blocked.Code, blocked.Stderr)
	}
	if w := toolWrites(t, c, ns, before); len(w) > 0 {
		t.Fatalf("the planned or blocked rollback wrote to the cluster: %+v", w)
	}
	if h := c.Helm(t, "history", "app", "-n", ns); strings.Contains(h, "Rollback") {
		t.Fatalf("the blocked rollback made a revision:\n%s", h)
	}

	pods, claims := c.PodsAndClaims(t, ns, "app=db")
	delete(claims, "scratch")
	r = run(t, c, "rollback", "app", "1", "-n", ns, "--ack", "StatefulSet/db", "--ack", "PersistentVolumeClaim/scratch")
	if r.Code != 0 {
		t.Fatalf("acknowledged rollback: exit %d, want 0\n%s", r.Code, r.Stderr)
	}
	saysAll(t, "stderr", r.Stderr, "Release \"app\" rolled back to revision 1: revision 3, status deployed", "Outcome:")
	if h := c.Helm(t, "history", "app", "-n", ns); !strings.Contains(h, "Rollback to 1; safe-upgrade: 2 destructive acked (delete PersistentVolumeClaim/"+ns+"/scratch via flag, recreate-required StatefulSet.apps/"+ns+"/db via flag), 1 to delete") {
		t.Errorf("helm history lacks the rollback and its audit line:\n%s", h)
	}
	if got := templateStorage(t, c, ns); got != "1Gi" {
		t.Errorf("claim template after the rollback: %s, want 1Gi", got)
	}
	keptPodsAndClaims(t, c, ns, pods, claims)
	waitFor(t, "claim scratch deleted", func() bool {
		_, err := c.Clientset(t).CoreV1().PersistentVolumeClaims(ns).Get(t.Context(), "scratch", metav1.GetOptions{})
		return err != nil
	})
}

// TestRollbackImage: rolling back an image change is a rolling update that
// the gate lets through: applied by Helm's rollback to the previous
// revision (no REVISION), exit 0, its pods replaced and watched. Of the two
// ConfigMaps revision 2 added, Helm's rollback deletes the plain one and
// leaves the one marked helm.sh/resource-policy: keep, as planned.
func TestRollbackImage(t *testing.T) {
	c := testcluster.Get(t)
	ns, _ := webRelease(t, c, "nginx:1.25")
	c.Helm(t, "upgrade", "app", writeChart(t, "app", "1.1.0", map[string]string{"d.yaml": deployment("web", "nginx:1.26", "RollingUpdate", 3),
		"extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {a: b}\n",
		"kept.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept, annotations: {helm.sh/resource-policy: keep}}\ndata: {a: b}\n"}),
		"-n", ns, "--wait", "--timeout", "5m")

	p, r := planJSON(t, c, "rollback", "app", "-n", ns, "--detailed-exitcode")
	if r.Code != 3 || p.Release.Operation != "rollback" {
		t.Fatalf("rollback --dry-run --detailed-exitcode: exit %d, operation %q; want 3, rollback\n%s", r.Code, p.Release.Operation, r.Stderr)
	}
	if web := p.change(t, "Deployment", "web"); web.Class != "rolling" || web.Destructive {
		t.Errorf("Deployment web: class %s, destructive %v; want a rolling update", web.Class, web.Destructive)
	}
	if extra := p.change(t, "ConfigMap", "extra"); extra.Action != "delete" || extra.Destructive {
		t.Errorf("ConfigMap extra: %s, destructive %v; want a delete that is not destructive", extra.Action, extra.Destructive)
	}
	if kept := p.change(t, "ConfigMap", "kept"); kept.Action != "noop" || len(kept.Reasons) == 0 || !strings.Contains(kept.Reasons[0].Message, "but kept (helm.sh/resource-policy: keep)") {
		t.Errorf("ConfigMap kept: %s %+v; want a no-op, kept by its policy", kept.Action, kept.Reasons)
	}
	r = run(t, c, "rollback", "app", "-n", ns)
	if r.Code != 0 {
		t.Fatalf("rollback: exit %d, want 0\n%s", r.Code, r.Stderr)
	}
	saysAll(t, "stderr", r.Stderr, "rolled back to revision 1: revision 3", "Deployment.apps/"+ns+"/web: current: 3/3 updated, 3/3 ready", "Outcome: 1 as predicted, 0 differ")
	if h := c.Helm(t, "history", "app", "-n", ns); !strings.Contains(h, "Rollback to 1") {
		t.Errorf("helm history lacks the rollback:\n%s", h)
	}
	cms := c.Clientset(t).CoreV1().ConfigMaps(ns)
	if _, err := cms.Get(t.Context(), "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("ConfigMap kept after the rollback: %v", err)
	}
	waitFor(t, "ConfigMap extra deleted", func() bool {
		_, err := cms.Get(t.Context(), "extra", metav1.GetOptions{})
		return err != nil
	})
	d, err := c.Clientset(t).AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.25" {
		t.Errorf("Deployment web after the rollback: %v, image %v", err, d)
	}
}

// TestRollbackHelm4: a release Helm 4 applied server-side is planned
// server-side (revision 2's ConfigMap deleted, the other's value patched
// back) and rolled back through Helm 4's rollback action: history says
// "Rollback to 1" with the tool's audit line, the record stays server-side,
// and the object is Helm's by server-side apply (field manager helm,
// operation Apply).
func TestRollbackHelm4(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	chart := func(v string, extra bool) string {
		files := map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {v: \"" + v + "\"}\n"}
		if extra {
			files["extra.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {a: b}\n"
		}
		return writeChart(t, "app", "1.0."+v, files)
	}
	mustBin(t, c, c.Helm4, "install", "app", chart("1", false), "-n", ns)
	mustBin(t, c, c.Helm4, "upgrade", "app", chart("2", true), "-n", ns)

	p, r := planJSON(t, c, "rollback", "app", "1", "-n", ns, "--detailed-exitcode")
	if r.Code != 3 || p.Release.Operation != "rollback" || p.Release.ApplyMethod != "ssa" {
		t.Fatalf("rollback --dry-run: exit %d, operation %q, apply method %q; want 3, rollback, ssa\n%s", r.Code, p.Release.Operation, p.Release.ApplyMethod, r.Stderr)
	}
	if extra := p.change(t, "ConfigMap", "extra"); extra.Action != "delete" {
		t.Errorf("ConfigMap extra: %s, want a delete", extra.Action)
	}
	if settings := p.change(t, "ConfigMap", "settings"); settings.Action != "update" || settings.Class != "in-place" {
		t.Errorf("ConfigMap settings: %s %s, want an in-place update", settings.Action, settings.Class)
	}

	r = run(t, c, "rollback", "app", "1", "-n", ns)
	if r.Code != 0 {
		t.Fatalf("rollback: exit %d, want 0\n%s", r.Code, r.Stderr)
	}
	if h := mustBin(t, c, c.Helm4, "history", "app", "-n", ns); !strings.Contains(h, "Rollback to 1; safe-upgrade") {
		t.Errorf("helm 4 history lacks the rollback with the audit line:\n%s", h)
	}
	cms := c.Clientset(t).CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(t.Context(), "settings", metav1.GetOptions{})
	if err != nil || cm.Data["v"] != "1" {
		t.Fatalf("ConfigMap settings after the rollback: %v %v, want v=1", err, cm.Data)
	}
	applied := false
	for _, m := range cm.ManagedFields {
		applied = applied || (m.Manager == "helm" && m.Operation == metav1.ManagedFieldsOperationApply)
	}
	if !applied {
		t.Errorf("ConfigMap settings is not Helm's by server-side apply: %+v", cm.ManagedFields)
	}
	waitFor(t, "ConfigMap extra deleted", func() bool {
		_, err := cms.Get(t.Context(), "extra", metav1.GetOptions{})
		return err != nil
	})
	// The next plan reads the new revision as server-side, with nothing to do.
	if p, r := planJSON(t, c, "app", chart("1", false), "-n", ns); r.Code != 0 || p.Release.ApplyMethod != "ssa" {
		t.Errorf("upgrade plan after the rollback: exit %d, apply method %q; want 0, ssa\n%s", r.Code, p.Release.ApplyMethod, r.Stderr)
	}
}
