package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/guard"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// guardInstallCannotLabel: a claim named as a StatefulSet's claim
// template names it, made before the guard's marker (by hand here), that
// another admission policy will not let anyone label. guard install says it
// cannot protect it and why, the API server's message escaped, and still
// installs the guard (exit 0); the claim is left as it was.
func guardInstallCannotLabel(t *testing.T, c *testcluster.Cluster) {
	ns := c.Namespace(t)
	objs := `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: kept}
spec:
  replicas: 0
  serviceName: kept
  selector: {matchLabels: {app: kept}}
  template:
    metadata: {labels: {app: kept}}
    spec: {containers: [{name: c, image: example.com/db:1}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-kept-0}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`
	// The policy's message carries an escape sequence: text from the API
	// server that must not reach the terminal raw.
	policy := `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: no-labels-` + ns + `}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [''], apiVersions: [v1], operations: [UPDATE], resources: [persistentvolumeclaims]}]
  validations:
  - expression: "object.metadata.?labels.orValue({}) == oldObject.metadata.?labels.orValue({})"
    message: "labels are frozen here \u001b[31mred"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-labels-` + ns + `}
spec:
  policyName: no-labels-` + ns + `
  validationActions: [Deny]
  matchResources: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ` + ns + `}}}
`
	dir := t.TempDir()
	objsFile, policyFile := filepath.Join(dir, "objs.yaml"), filepath.Join(dir, "policy.yaml")
	for f, s := range map[string]string{objsFile: objs, policyFile: policy} {
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustBin(t, c, c.Kubectl, "apply", "-n", ns, "-f", objsFile)
	uid := uidOf(t, c, "-n", ns, "pvc", "data-kept-0")
	mustBin(t, c, c.Kubectl, "apply", "-f", policyFile)
	t.Cleanup(func() { kubectlErr(t, c, "delete", "-f", policyFile, "--ignore-not-found") })
	// Each probe sets a value the claim has not had, so that each is an
	// update: kubectl sends nothing for a label it already carries, and a
	// probe label whose removal the policy refused would stay.
	probe := 0
	testcluster.Eventually(t, "the policy refuses a label", func() (bool, string) {
		probe++
		out, err := kubectlErr(t, c, "label", "--overwrite", "-n", ns, "pvc", "data-kept-0", fmt.Sprint("probe=", probe))
		return err != nil && strings.Contains(out, "labels are frozen here"), out
	})

	r := run(t, c, "guard", "install")
	want := "cannot protect PersistentVolumeClaim " + ns + "/data-kept-0: made from StatefulSet kept's claim template, but it could not be labelled " + guard.GuardedLabel + ": "
	if r.Code != 0 || !strings.Contains(r.Stdout, want) || !strings.Contains(r.Stdout, "labels are frozen here") {
		t.Fatalf("guard install: exit %d, want 0 and a line %q with the policy's message\n%s%s", r.Code, want, r.Stdout, r.Stderr)
	}
	if strings.ContainsRune(r.Stdout+r.Stderr, '\x1b') {
		t.Fatalf("guard install printed the API server's escape sequence raw:\n%q", r.Stdout)
	}
	if got := uidOf(t, c, "-n", ns, "pvc", "data-kept-0"); got != uid {
		t.Fatalf("the claim's UID is %s, was %s", got, uid)
	}
	if labels := mustBin(t, c, c.Kubectl, "get", "-n", ns, "pvc", "data-kept-0", "-o", "jsonpath={.metadata.labels}"); strings.Contains(labels, guard.GuardedLabel) {
		t.Fatalf("the claim is labelled %s", labels)
	}
	if r := run(t, c, "guard", "status"); r.Code != 0 || !strings.Contains(r.Stdout, "cannot protect PersistentVolumeClaim "+ns+"/data-kept-0") {
		t.Fatalf("guard status: exit %d, want the claim it cannot protect named\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}
