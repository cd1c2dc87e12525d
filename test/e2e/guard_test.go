package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	helmcli "helm.sh/helm/v3/pkg/cli"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/guard"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// guardVolumeChart is a release with a templated claim (which helm
// uninstall deletes, helm#8515) and a templated CRD (likewise).
var guardVolumeChart = map[string]string{
	"pvc.yaml": `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: files}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`,
	"crd.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: {{ .Release.Namespace }}gadgets.guard.example.com}
spec:
  group: guard.example.com
  names: {kind: {{ .Release.Namespace | replace "-" "" | title }}Gadget, plural: {{ .Release.Namespace }}gadgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`,
	"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n",
}

// kubectlErr runs kubectl and returns its combined output and error.
func kubectlErr(t *testing.T, c *testcluster.Cluster, args ...string) (string, error) {
	t.Helper()
	return bin(t, c, c.Kubectl, args...)
}

// refused runs kubectl args and checks the guard refused it with its
// message naming the object and the acknowledging command.
func refused(t *testing.T, c *testcluster.Cluster, object string, args ...string) {
	t.Helper()
	out, err := kubectlErr(t, c, args...)
	if err == nil || !strings.Contains(out, "safe-upgrade guard: refusing to delete "+object) || !strings.Contains(out, "kubectl annotate ") || !strings.Contains(out, guard.AckAnnotation+"=") {
		t.Fatalf("kubectl %s: want the guard's refusal of %s, got %v\n%s", strings.Join(args, " "), object, err, out)
	}
}

func uidOf(t *testing.T, c *testcluster.Cluster, args ...string) types.UID {
	t.Helper()
	return types.UID(strings.TrimSpace(mustBin(t, c, c.Kubectl, append([]string{"get", "-o", "jsonpath={.metadata.uid}"}, args...)...)))
}

// guardInForce waits until the API server enforces the guard (policies
// reach every API server through an informer): a probe claim of a release
// is refused. A probe deleted before that is made again.
func guardInForce(t *testing.T, c *testcluster.Cluster, ns string) {
	t.Helper()
	probe := "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: guard-probe, annotations: {meta.helm.sh/release-name: probe}}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n"
	file := filepath.Join(t.TempDir(), "probe.yaml")
	if err := os.WriteFile(file, []byte(probe), 0o644); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, "the guard refuses a delete", func() (bool, string) {
		mustBin(t, c, c.Kubectl, "apply", "-n", ns, "-f", file)
		out, err := kubectlErr(t, c, "delete", "-n", ns, "pvc", "guard-probe", "--wait=false")
		return err != nil && strings.Contains(out, "safe-upgrade guard"), out
	})
}

// TestGuard: with the guard installed, every client's delete of a
// release's data is refused with the message, and passes once the object
// carries its own UID as the acknowledgement; the tool's own acknowledged
// recreate passes. A control plane of its own: the guard is cluster-wide,
// and the other tests delete what they like.
func TestGuard(t *testing.T) {
	c := testcluster.Private(t)
	ns := c.Namespace(t)
	guardNS := c.Namespace(t)

	// The tool's acknowledged StatefulSet recreate, and the StatefulSet of
	// the kubectl cases.
	stsNS, v2 := stsRelease(t, c)
	vol := writeChart(t, "vol", "1.0.0", guardVolumeChart)
	c.Helm(t, "install", "vol", vol, "-n", ns)
	crd := ns + "gadgets.guard.example.com"
	gadget := "apiVersion: guard.example.com/v1\nkind: " + strings.Title(strings.ReplaceAll(ns, "-", "")) + "Gadget\nmetadata: {name: g1}\n" //nolint:staticcheck // as the chart's title
	gadgetFile := filepath.Join(t.TempDir(), "gadget.yaml")
	if err := os.WriteFile(gadgetFile, []byte(gadget), 0o644); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, "the CRD is served", func() (bool, string) {
		out, err := kubectlErr(t, c, "apply", "-n", ns, "-f", gadgetFile)
		return err == nil, out
	})

	// The StatefulSet's claims were made before the guard: guard install
	// labels them as its marker labels new ones, and says what it protects.
	r := run(t, c, "guard", "install")
	if r.Code != 0 || !strings.Contains(r.Stdout, "ValidatingAdmissionPolicy "+guard.Name+" applied") || !strings.Contains(r.Stdout, "MutatingAdmissionPolicy "+guard.Name+" applied") ||
		!strings.Contains(r.Stdout, "protects ") || !strings.Contains(r.Stdout, "on 2 claims made from claim templates") {
		t.Fatalf("guard install: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if r := run(t, c, "guard", "status"); r.Code != 0 || strings.Count(r.Stdout, ": installed") != 4 || strings.Contains(r.Stdout, "cannot protect PersistentVolumeClaim "+stsNS) {
		t.Fatalf("guard status: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	guardInForce(t, c, guardNS)

	pods, claims := c.PodsAndClaims(t, stsNS, "")
	pvcUID := uidOf(t, c, "-n", ns, "pvc", "files")
	crdUID := uidOf(t, c, "crd", crd)
	gadgetUID := uidOf(t, c, "-n", ns, "-f", gadgetFile)

	t.Run("every client is refused", func(t *testing.T) {
		refused(t, c, "PersistentVolumeClaim "+ns+"/files", "delete", "-n", ns, "pvc", "files", "--wait=false")
		refused(t, c, "StatefulSet "+stsNS+"/db", "delete", "-n", stsNS, "sts", "db", "--wait=false")
		refused(t, c, "CustomResourceDefinition "+crd, "delete", "crd", crd, "--wait=false")
		// kubectl replace --force deletes, then creates.
		live := filepath.Join(t.TempDir(), "sts.yaml")
		if err := os.WriteFile(live, []byte(mustBin(t, c, c.Kubectl, "get", "-n", stsNS, "sts", "db", "-o", "yaml")), 0o644); err != nil {
			t.Fatal(err)
		}
		refused(t, c, "StatefulSet "+stsNS+"/db", "replace", "--force", "-f", live)
		// The real helm's uninstall of a release with a templated claim
		// and CRD: it fails; helm v3 says why with --debug only.
		if out, err := c.HelmErr("uninstall", "vol", "-n", ns, "--debug"); err == nil || !strings.Contains(out, "safe-upgrade guard: refusing to delete PersistentVolumeClaim "+ns+"/files") {
			t.Fatalf("helm uninstall: want the guard's refusal, got %v\n%s", err, out)
		}
		// Dry-runs always pass.
		for _, args := range [][]string{{"-n", ns, "pvc", "files"}, {"-n", stsNS, "sts", "db"}, {"crd", crd}} {
			if out, err := kubectlErr(t, c, append(append([]string{"delete"}, args...), "--dry-run=server")...); err != nil {
				t.Errorf("kubectl delete %v --dry-run=server: %v\n%s", args, err, out)
			}
		}
		if got := uidOf(t, c, "-n", ns, "pvc", "files"); got != pvcUID {
			t.Errorf("the claim's UID went from %s to %s", pvcUID, got)
		}
		if got := uidOf(t, c, "crd", crd); got != crdUID {
			t.Errorf("the CRD's UID went from %s to %s", crdUID, got)
		}
		if got := uidOf(t, c, "-n", ns, "-f", gadgetFile); got != gadgetUID {
			t.Errorf("the custom resource's UID went from %s to %s", gadgetUID, got)
		}
		keptPodsAndClaims(t, c, stsNS, pods, claims)
	})

	t.Run("helm 4 and the Helm SDK inside a controller are refused", func(t *testing.T) {
		ns4, nsSDK := c.Namespace(t), c.Namespace(t)
		mustBin(t, c, c.Helm4, "install", "vol", vol, "-n", ns4)
		c.Helm(t, "install", "vol", vol, "-n", nsSDK)
		uid4, uidSDK := uidOf(t, c, "-n", ns4, "pvc", "files"), uidOf(t, c, "-n", nsSDK, "pvc", "files")
		if out, err := bin(t, c, c.Helm4, "uninstall", "vol", "-n", ns4, "--debug"); err == nil || !strings.Contains(out, "safe-upgrade guard: refusing to delete PersistentVolumeClaim "+ns4+"/files") {
			t.Errorf("helm4 uninstall: want the guard's refusal, got %v\n%s", err, out)
		}
		// As helm-controller does: Helm's uninstall action, in-process.
		settings := helmcli.New()
		settings.KubeConfig = c.Kubeconfig
		settings.SetNamespace(nsSDK)
		var logs strings.Builder
		cfg := new(action.Configuration)
		if err := cfg.Init(settings.RESTClientGetter(), nsSDK, "secret", func(format string, v ...interface{}) {
			fmt.Fprintf(&logs, format+"\n", v...)
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := action.NewUninstall(cfg).Run("vol"); err == nil || !strings.Contains(logs.String(), "safe-upgrade guard: refusing to delete PersistentVolumeClaim "+nsSDK+"/files") {
			t.Errorf("the SDK's uninstall: want the guard's refusal, got %v\n%s", err, logs.String())
		}
		if got := uidOf(t, c, "-n", ns4, "pvc", "files"); got != uid4 {
			t.Errorf("helm 4's claim: UID %s, was %s", got, uid4)
		}
		if got := uidOf(t, c, "-n", nsSDK, "pvc", "files"); got != uidSDK {
			t.Errorf("the SDK's claim: UID %s, was %s", got, uidSDK)
		}
	})

	t.Run("the tool's acknowledged recreate passes", func(t *testing.T) {
		// Unacknowledged, the gate blocks it before anything reaches the guard.
		if r := run(t, c, "app", v2, "-n", stsNS); r.Code != 2 {
			t.Fatalf("without --ack: exit %d, want 2 (blocked by the gate)\n%s", r.Code, r.Stderr)
		}
		r := run(t, c, "app", v2, "-n", stsNS, "--ack", "StatefulSet/"+stsNS+"/db")
		if r.Code != 0 {
			t.Fatalf("exit %d\n%s", r.Code, r.Stderr)
		}
		if got := templateStorage(t, c, stsNS); got != "2Gi" {
			t.Fatalf("claim template after apply: %s, want 2Gi", got)
		}
		keptPodsAndClaims(t, c, stsNS, pods, claims)
	})

	t.Run("the tool acknowledges to the guard the deletes its gate acknowledged", func(t *testing.T) {
		// helm uninstall deletes a templated claim and CRD: unacknowledged,
		// the gate blocks and nothing is annotated; acknowledged, the tool
		// annotates exactly those and the guard lets Helm's deletes pass.
		uns := c.Namespace(t)
		c.Helm(t, "install", "vol", vol, "-n", uns)
		ucrd := uns + "gadgets.guard.example.com"
		before := auditMark(t, c)
		if r := run(t, c, "uninstall", "vol", "-n", uns); r.Code != 2 {
			t.Fatalf("unacknowledged uninstall: exit %d, want 2 (blocked by the gate)\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		assertOnlyDryRunWrites(t, c, uns, before)
		for _, obj := range [][]string{{"-n", uns, "pvc", "files"}, {"crd", ucrd}} {
			if got := mustBin(t, c, c.Kubectl, append([]string{"get", "-o", "jsonpath={.metadata.annotations}"}, obj...)...); strings.Contains(got, guard.AckAnnotation) {
				t.Errorf("the blocked uninstall annotated %v: %s", obj, got)
			}
		}
		r := run(t, c, append([]string{"uninstall", "vol", "-n", uns}, destructiveAcks(t, c, 2, "uninstall", "vol", "-n", uns)...)...)
		if r.Code != 0 {
			t.Fatalf("acknowledged uninstall: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		gone(t, c, "-n", uns, "pvc", "files")
		gone(t, c, "crd", ucrd)

		// An upgrade that drops the templated claim, acknowledged.
		gns := c.Namespace(t)
		c.Helm(t, "install", "vol", vol, "-n", gns)
		gcrd := gns + "gadgets.guard.example.com"
		dropped := map[string]string{}
		for k, v := range guardVolumeChart {
			if k != "pvc.yaml" {
				dropped[k] = v
			}
		}
		vol2 := writeChart(t, "vol", "1.1.0", dropped)
		r = run(t, c, append([]string{"vol", vol2, "-n", gns}, destructiveAcks(t, c, 1, "vol", vol2, "-n", gns)...)...)
		if r.Code != 0 {
			t.Fatalf("acknowledged upgrade dropping the claim: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		gone(t, c, "-n", gns, "pvc", "files")
		// A rollback to a revision without the claim, acknowledged.
		rns := c.Namespace(t)
		c.Helm(t, "install", "vol", vol2, "-n", rns)
		c.Helm(t, "upgrade", "vol", vol, "-n", rns)
		r = run(t, c, append([]string{"rollback", "vol", "1", "-n", rns}, destructiveAcks(t, c, 1, "rollback", "vol", "1", "-n", rns)...)...)
		if r.Code != 0 {
			t.Fatalf("acknowledged rollback dropping the claim: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		gone(t, c, "-n", rns, "pvc", "files")

		// Helm fails (a pre-upgrade hook) before its delete: the
		// acknowledgement written is removed from the claim still there.
		fns := c.Namespace(t)
		c.Helm(t, "install", "vol", vol, "-n", fns)
		failing := map[string]string{"hook.yaml": strings.Replace(migrateHook("migrate:crash"), "spec:\n  template:", "spec:\n  backoffLimit: 0\n  template:", 1)}
		for k, v := range dropped {
			failing[k] = v
		}
		vol3 := writeChart(t, "vol", "1.2.0", failing)
		r = run(t, c, append([]string{"vol", vol3, "-n", fns, "--debug"}, destructiveAcks(t, c, 1, "vol", vol3, "-n", fns)...)...)
		if r.Code != 1 || !strings.Contains(r.Stderr, "acknowledged to the guard") {
			t.Fatalf("acknowledged upgrade whose hook fails: exit %d, want 1 and the acknowledgement logged\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		if got := mustBin(t, c, c.Kubectl, "get", "-n", fns, "pvc", "files", "-o", "jsonpath={.metadata.annotations}"); strings.Contains(got, guard.AckAnnotation) {
			t.Errorf("after Helm failed the claim still carries the acknowledgement: %s", got)
		}

		// What was not deleted was not acknowledged.
		if got := mustBin(t, c, c.Kubectl, "get", "crd", gcrd, "-o", "jsonpath={.metadata.annotations}"); strings.Contains(got, guard.AckAnnotation) {
			t.Errorf("the upgrade annotated the CRD it keeps: %s", got)
		}
	})

	t.Run("the tool's uninstall of a StatefulSet is gated for the guard", func(t *testing.T) { guardedStatefulSetUninstall(t, c) })

	t.Run("the acknowledgement is bound to the object's UID", func(t *testing.T) {
		// The claim's UID on the ConfigMap's twin: another claim.
		twin := "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: twin, annotations: {meta.helm.sh/release-name: vol}}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n"
		file := filepath.Join(t.TempDir(), "twin.yaml")
		if err := os.WriteFile(file, []byte(twin), 0o644); err != nil {
			t.Fatal(err)
		}
		mustBin(t, c, c.Kubectl, "apply", "-n", ns, "-f", file)
		mustBin(t, c, c.Kubectl, "annotate", "-n", ns, "pvc", "twin", guard.AckAnnotation+"="+string(pvcUID))
		refused(t, c, "PersistentVolumeClaim "+ns+"/twin", "delete", "-n", ns, "pvc", "twin", "--wait=false")

		mustBin(t, c, c.Kubectl, "annotate", "-n", ns, "pvc", "files", guard.AckAnnotation+"="+string(pvcUID))
		mustBin(t, c, c.Kubectl, "delete", "-n", ns, "pvc", "files", "--wait=false")
		crdAck := guard.AckAnnotation + "=" + string(crdUID)
		mustBin(t, c, c.Kubectl, "annotate", "crd", crd, crdAck)
		mustBin(t, c, c.Kubectl, "delete", "crd", crd, "--wait=false")
	})

	t.Run("a protected namespace and what it holds", func(t *testing.T) {
		pns := c.Namespace(t)
		mustBin(t, c, c.Kubectl, "label", "namespace", pns, guard.ProtectLabel+"=true")
		// A claim without the Helm annotation, as a volumeClaimTemplate makes.
		claim := "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data-db-0}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n"
		file := filepath.Join(t.TempDir(), "claim.yaml")
		if err := os.WriteFile(file, []byte(claim), 0o644); err != nil {
			t.Fatal(err)
		}
		mustBin(t, c, c.Kubectl, "apply", "-n", pns, "-f", file)
		refused(t, c, "PersistentVolumeClaim "+pns+"/data-db-0", "delete", "-n", pns, "pvc", "data-db-0", "--wait=false")
		refused(t, c, "Namespace "+pns+":", "delete", "namespace", pns, "--wait=false")
		// Acknowledged, the Namespace is deleted, but the claim stays until
		// it is acknowledged too: it holds data, the namespace does not.
		claimUID := uidOf(t, c, "-n", pns, "pvc", "data-db-0")
		mustBin(t, c, c.Kubectl, "annotate", "namespace", pns, guard.AckAnnotation+"="+string(uidOf(t, c, "namespace", pns)))
		mustBin(t, c, c.Kubectl, "delete", "namespace", pns, "--wait=false")
		waitsForAck(t, c, pns, map[string]types.UID{"data-db-0": claimUID})
		gone(t, c, "namespace", pns)
	})

	t.Run("a release's data is kept whatever created the namespace or the claims", func(t *testing.T) { guardKeepsReleaseData(t, c) })
	t.Run("a chart cannot acknowledge its own deletion", func(t *testing.T) { guardSelfAcknowledgement(t, c) })
	t.Run("removing the release's identity does not unguard", func(t *testing.T) { guardKeepsIdentity(t, c) })
	t.Run("volumes follow their claims", func(t *testing.T) { guardVolumes(t, c) })
	t.Run("guard install says which claim it could not label and why", func(t *testing.T) { guardInstallCannotLabel(t, c) })

	t.Run("a casual delete leaves the guard in force", func(t *testing.T) { guardSurvivesCasualDelete(t, c, stsNS) })

	t.Run("guard uninstall removes exactly what it installed", func(t *testing.T) {
		// Someone else's policy stays.
		other := "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: someone-elses}\nspec:\n  matchConstraints:\n    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]\n  validations: [{expression: 'true'}]\n"
		file := filepath.Join(t.TempDir(), "other.yaml")
		if err := os.WriteFile(file, []byte(other), 0o644); err != nil {
			t.Fatal(err)
		}
		mustBin(t, c, c.Kubectl, "apply", "-f", file)
		r := run(t, c, "guard", "uninstall")
		if r.Code != 0 || strings.Count(r.Stdout, " deleted") != 4 {
			t.Fatalf("guard uninstall: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		left := mustBin(t, c, c.Kubectl, "get", "validatingadmissionpolicies,validatingadmissionpolicybindings", "-o", "name")
		if strings.Contains(left, guard.Name) || !strings.Contains(left, "someone-elses") {
			t.Errorf("after guard uninstall:\n%s", left)
		}
		if r := run(t, c, "guard", "status"); r.Code != 0 || strings.Count(r.Stdout, ": not installed") != 4 {
			t.Errorf("guard status after uninstall: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
	})

	t.Run("the printed guard applied with kubectl behaves the same", func(t *testing.T) {
		r := run(t, c, "guard", "install", "--dry-run", "-o", "yaml")
		if r.Code != 0 {
			t.Fatalf("guard install --dry-run: exit %d\n%s", r.Code, r.Stderr)
		}
		ctx, cancel := testcluster.CommandContext(t)
		defer cancel()
		cmd := exec.CommandContext(ctx, c.Kubectl, "apply", "-f", "-")
		cmd.Env, cmd.Stdin = c.Env(), strings.NewReader(r.Stdout)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl apply -f -: %v\n%s", err, out)
		}
		guardInForce(t, c, guardNS)
		refused(t, c, "StatefulSet "+stsNS+"/db", "delete", "-n", stsNS, "sts", "db", "--wait=false")
		keptPodsAndClaims(t, c, stsNS, pods, claims)
		if r := run(t, c, "guard", "status"); r.Code != 0 || strings.Count(r.Stdout, ": installed") != 4 || strings.Contains(r.Stdout, "another version") {
			t.Errorf("guard status of the kubectl-applied guard: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if r := run(t, c, "guard", "uninstall"); r.Code != 0 || strings.Count(r.Stdout, " deleted") != 4 {
			t.Fatalf("guard uninstall: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
	})
}

// destructiveAcks plans args and returns the --ack flags of its destructive
// changes, which must number want.
func destructiveAcks(t *testing.T, c *testcluster.Cluster, want int, args ...string) []string {
	t.Helper()
	p, _ := planJSON(t, c, args...)
	acks := p.ackFlags()
	if len(acks) != 2*want {
		t.Fatalf("plan of %v: acks %q, want %d destructive changes", args, acks, want)
	}
	return acks
}

// gone waits until kubectl get args finds nothing.
func gone(t *testing.T, c *testcluster.Cluster, args ...string) {
	t.Helper()
	testcluster.Eventually(t, strings.Join(args, " ")+" is deleted", func() (bool, string) {
		out, err := kubectlErr(t, c, append([]string{"get", "-o", "name"}, args...)...)
		return err != nil && strings.Contains(out, "NotFound"), out
	})
}
