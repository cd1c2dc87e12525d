package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/guard"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// The attacks on the guard of issue #49, each replayed with the guard in
// force (TestGuard's private control plane): the data stays, with its UIDs.

// refusedWith runs kubectl args and checks the guard refused it with a
// message holding want and the acknowledging command.
func refusedWith(t *testing.T, c *testcluster.Cluster, want string, args ...string) {
	t.Helper()
	out, err := kubectlErr(t, c, args...)
	if err == nil || !strings.Contains(out, "safe-upgrade guard: "+want) || !strings.Contains(out, "kubectl annotate ") {
		t.Fatalf("kubectl %s: want the guard's refusal %q, got %v\n%s", strings.Join(args, " "), want, err, out)
	}
}

// keptUIDsOf checks each object named by kubectl get args still has its UID.
func keptUIDsOf(t *testing.T, c *testcluster.Cluster, want map[string]types.UID, args func(name string) []string) {
	t.Helper()
	for name, uid := range want {
		if got := uidOf(t, c, args(name)...); got != uid {
			t.Errorf("%s: UID %q, was %s", name, got, uid)
		}
	}
}

// waitsForAck: namespace ns is being deleted; once the namespace
// controller has deleted what it may (its StatefulSets are gone), the
// guarded claims are still there with their UIDs and the namespace
// Terminating; guard status names each with the command that
// acknowledges it, and those commands let the namespace go.
func waitsForAck(t *testing.T, c *testcluster.Cluster, ns string, claims map[string]types.UID) {
	t.Helper()
	testcluster.Eventually(t, "the namespace controller tried to empty "+ns, func() (bool, string) {
		out, err := kubectlErr(t, c, "get", "namespace", ns, "-o", "jsonpath={.status.conditions[?(@.type=='NamespaceDeletionContentFailure')].message}")
		return err == nil && strings.Contains(out, "safe-upgrade guard"), out
	})
	if phase := mustBin(t, c, c.Kubectl, "get", "namespace", ns, "-o", "jsonpath={.status.phase}"); phase != "Terminating" {
		t.Fatalf("namespace %s: phase %q, want Terminating", ns, phase)
	}
	keptUIDsOf(t, c, claims, func(name string) []string { return []string{"-n", ns, "pvc", name} })
	r := run(t, c, "guard", "status")
	var acks [][]string
	for _, line := range strings.Split(r.Stdout, "\n") {
		f := strings.Fields(line)
		if len(f) == 7 && f[0] == "kubectl" && f[1] == "annotate" && f[5] == ns {
			acks = append(acks, f[1:])
		}
	}
	if r.Code != 0 || len(acks) != len(claims) {
		t.Fatalf("guard status: exit %d, want one acknowledging command per kept claim (%d)\n%s%s", r.Code, len(claims), r.Stdout, r.Stderr)
	}
	for _, a := range acks {
		mustBin(t, c, c.Kubectl, a...)
	}
}

// guardKeepsReleaseData: a release installed by real helm with
// --create-namespace (no label, no annotation on the namespace), with a
// StatefulSet's claims and a templated claim on volumes reclaimed Delete:
// its claims are marked by the guard's marker, kubectl delete pvc --all
// refuses every one, and kubectl delete namespace keeps them (and their
// volumes) until each is acknowledged.
func guardKeepsReleaseData(t *testing.T, c *testcluster.Cluster) {
	ns := "created-" + strings.TrimPrefix(c.Namespace(t), "e2e-")
	boundVolumesReclaimed(t, c, ns, corev1.PersistentVolumeReclaimDelete, "data-db-0", "data-db-1", "files")
	chart := writeChart(t, "db", "1.0.0", map[string]string{"sts.yaml": baseSTS.yaml(), "pvc.yaml": guardVolumeChart["pvc.yaml"]})
	c.Helm(t, "install", "db", chart, "-n", ns, "--create-namespace")
	names := []string{"data-db-0", "data-db-1", "files"}
	testcluster.Eventually(t, "the claims are bound", func() (bool, string) {
		out, _ := kubectlErr(t, c, "get", "pvc", "-n", ns, "-o", "jsonpath={range .items[*]}{.metadata.name}={.status.phase} {end}")
		for _, n := range names {
			if !strings.Contains(out, n+"=Bound") {
				return false, out
			}
		}
		return true, out
	})
	if got := mustBin(t, c, c.Kubectl, "get", "pvc", "-n", ns, "data-db-0", "-o", "jsonpath={.metadata.labels}"); !strings.Contains(got, guard.GuardedLabel) {
		t.Fatalf("the claim the StatefulSet made is not marked: labels %s", got)
	}
	claims := map[string]types.UID{}
	volumes := map[string]types.UID{}
	for _, n := range names {
		claims[n] = uidOf(t, c, "-n", ns, "pvc", n)
		volumes[ns+"-"+n] = uidOf(t, c, "pv", ns+"-"+n)
	}
	refusedWith(t, c, "refusing to delete PersistentVolumeClaim "+ns+"/", "delete", "pvc", "--all", "-n", ns, "--wait=false")
	keptUIDsOf(t, c, claims, func(name string) []string { return []string{"-n", ns, "pvc", name} })

	mustBin(t, c, c.Kubectl, "delete", "namespace", ns, "--wait=false")
	waitsForAck(t, c, ns, claims)
	gone(t, c, "namespace", ns)
}

// selfAckChart acknowledges its own claim's deletion with the UID it
// reads through lookup (empty at install, the UID from the first upgrade).
var selfAckChart = map[string]string{"pvc.yaml": `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: precious
  annotations:
    safe-upgrade.io/ack-delete: "{{ with (lookup "v1" "PersistentVolumeClaim" .Release.Namespace "precious") }}{{ .metadata.uid }}{{ end }}"
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`}

// guardSelfAcknowledgement: the tool's plan of such a chart is invalid
// (exit 2, nothing written); applied by real helm v3 and v4, the guard
// refuses the write of the acknowledgement, and a later uninstall keeps
// the claim.
func guardSelfAcknowledgement(t *testing.T, c *testcluster.Cluster) {
	chart := writeChart(t, "selfack", "1.0.0", selfAckChart)
	for _, h := range []struct{ name, helm string }{{"helm3", c.Helm3}, {"helm4", c.Helm4}} {
		t.Run(h.name, func(t *testing.T) {
			ns := c.Namespace(t)
			mustBin(t, c, h.helm, "install", "selfack", chart, "-n", ns)
			uid := uidOf(t, c, "-n", ns, "pvc", "precious")
			before := auditMark(t, c)
			r := run(t, c, "selfack", chart, "-n", ns)
			if r.Code != 2 || !strings.Contains(r.Stdout, "invalid") || !strings.Contains(r.Stdout, "a chart cannot acknowledge its own deletion") {
				t.Fatalf("the tool's plan: exit %d, want 2 with the change invalid\n%s\n%s", r.Code, r.Stdout, r.Stderr)
			}
			assertOnlyDryRunWrites(t, c, ns, before)
			if out, err := bin(t, c, h.helm, "upgrade", "selfack", chart, "-n", ns); err == nil || !strings.Contains(out, "refusing to set "+guard.AckAnnotation) {
				t.Fatalf("%s upgrade: want the guard's refusal of the acknowledgement, got %v\n%s", h.name, err, out)
			}
			if got := mustBin(t, c, c.Kubectl, "get", "-n", ns, "pvc", "precious", "-o", "jsonpath={.metadata.annotations}"); strings.Contains(got, string(uid)) {
				t.Fatalf("the claim carries its own UID after the refused upgrade: %s", got)
			}
			if out, err := bin(t, c, h.helm, "uninstall", "selfack", "-n", ns, "--debug"); err == nil || !strings.Contains(out, "refusing to delete PersistentVolumeClaim "+ns+"/precious") {
				t.Fatalf("%s uninstall: want the guard's refusal, got %v\n%s", h.name, err, out)
			}
			if got := uidOf(t, c, "-n", ns, "pvc", "precious"); got != uid {
				t.Errorf("the claim's UID went from %s to %s", uid, got)
			}
		})
	}
}

// guardKeepsIdentity: removing Helm's annotation from a release's claim,
// or a namespace's protect label, is refused unless acknowledged, and the
// claim's delete is still refused.
func guardKeepsIdentity(t *testing.T, c *testcluster.Cluster) {
	ns := c.Namespace(t)
	c.Helm(t, "install", "keep", writeChart(t, "keep", "1.0.0", map[string]string{"pvc.yaml": guardVolumeChart["pvc.yaml"]}), "-n", ns)
	uid := uidOf(t, c, "-n", ns, "pvc", "files")
	refusedWith(t, c, "refusing to remove "+guard.ReleaseAnnotation, "annotate", "-n", ns, "pvc", "files", guard.ReleaseAnnotation+"-")
	refused(t, c, "PersistentVolumeClaim "+ns+"/files", "delete", "-n", ns, "pvc", "files", "--wait=false")
	if got := uidOf(t, c, "-n", ns, "pvc", "files"); got != uid {
		t.Fatalf("the claim's UID went from %s to %s", uid, got)
	}
	// A claim marked as made from a claim template, and nothing else.
	marked := "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: marked, labels: {" + guard.GuardedLabel + ": " + guard.GuardedMark + "}}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n"
	file := filepath.Join(t.TempDir(), "marked.yaml")
	if err := os.WriteFile(file, []byte(marked), 0o644); err != nil {
		t.Fatal(err)
	}
	mustBin(t, c, c.Kubectl, "apply", "-n", ns, "-f", file)
	refusedWith(t, c, "refusing to remove ", "label", "-n", ns, "pvc", "marked", guard.GuardedLabel+"-")
	refused(t, c, "PersistentVolumeClaim "+ns+"/marked", "delete", "-n", ns, "pvc", "marked", "--wait=false")
	pns := c.Namespace(t)
	mustBin(t, c, c.Kubectl, "label", "namespace", pns, guard.ProtectLabel+"=true")
	refusedWith(t, c, "refusing to remove ", "label", "namespace", pns, guard.ProtectLabel+"-")
	refusedWith(t, c, "refusing to remove ", "label", "namespace", pns, guard.ProtectLabel+"=false", "--overwrite")
	// Acknowledged, the namespace may be deleted (the test's clean-up).
	mustBin(t, c, c.Kubectl, "annotate", "namespace", pns, guard.AckAnnotation+"="+string(uidOf(t, c, "namespace", pns)))
	// A namespace labelled protect=false when it is made (CI's throw-away
	// ones) is deleted with its claims: guard status names it.
	ons := "optout-" + strings.TrimPrefix(c.Namespace(t), "e2e-")
	optout := "apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ons + ", labels: {" + guard.ProtectLabel + ": \"false\"}}\n"
	nsFile := filepath.Join(t.TempDir(), "optout.yaml")
	if err := os.WriteFile(nsFile, []byte(optout), 0o644); err != nil {
		t.Fatal(err)
	}
	mustBin(t, c, c.Kubectl, "apply", "-f", nsFile)
	c.Helm(t, "install", "keep", writeChart(t, "keep", "1.0.0", map[string]string{"pvc.yaml": guardVolumeChart["pvc.yaml"]}), "-n", ons)
	if r := run(t, c, "guard", "status"); r.Code != 0 || !strings.Contains(r.Stdout, "cannot protect Namespace "+ons+": labelled "+guard.ProtectLabel+"=false") {
		t.Errorf("guard status: exit %d, want the opted-out namespace named\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	mustBin(t, c, c.Kubectl, "delete", "namespace", ons, "--wait=false")
	gone(t, c, "namespace", ons)
	// Acknowledged, the identity may go.
	mustBin(t, c, c.Kubectl, "annotate", "-n", ns, "pvc", "files", guard.AckAnnotation+"="+string(uid))
	mustBin(t, c, c.Kubectl, "annotate", "-n", ns, "pvc", "files", guard.ReleaseAnnotation+"-")
}

// guardVolumes: a provisioner's volume (no Helm annotation, reclaim
// Delete) bound to a release's claim is guarded; changing a volume's
// reclaim policy to Delete is refused until the volume is acknowledged.
func guardVolumes(t *testing.T, c *testcluster.Cluster) {
	ns := c.Namespace(t)
	boundVolumesReclaimed(t, c, ns, corev1.PersistentVolumeReclaimDelete, "files")
	boundVolumes(t, c, ns, "spare")
	c.Helm(t, "install", "vols", writeChart(t, "vols", "1.0.0", map[string]string{"pvc.yaml": guardVolumeChart["pvc.yaml"]}), "-n", ns)
	pv := ns + "-files"
	testcluster.Eventually(t, "the volume is bound", func() (bool, string) {
		out, _ := kubectlErr(t, c, "get", "pv", pv, "-o", "jsonpath={.status.phase}")
		return out == "Bound", out
	})
	uid := uidOf(t, c, "pv", pv)
	refused(t, c, "PersistentVolume "+pv, "delete", "pv", pv, "--wait=false")
	if got := uidOf(t, c, "pv", pv); got != uid {
		t.Fatalf("the volume's UID went from %s to %s", uid, got)
	}
	spare := ns + "-spare"
	toDelete := []string{"patch", "pv", spare, "-p", `{"spec":{"persistentVolumeReclaimPolicy":"Delete"}}`}
	refusedWith(t, c, "refusing to set persistentVolumeReclaimPolicy Delete on PersistentVolume "+spare, toDelete...)
	mustBin(t, c, c.Kubectl, "annotate", "pv", spare, guard.AckAnnotation+"="+string(uidOf(t, c, "pv", spare)))
	mustBin(t, c, c.Kubectl, toDelete...)
}
