package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/injection"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// noRawControl fails the test for each output that holds a raw control
// byte, C1 control, bidirectional control or byte that is not UTF-8.
func noRawControl(t *testing.T, outputs map[string]string) {
	t.Helper()
	for what, text := range outputs {
		if bad := injection.UnsafeLines(text); bad != "" {
			t.Errorf("%s: %s", what, bad)
		}
	}
}

// TestForgedLease (issue 40): a Lease of the release forged by anyone who
// may write Leases — its holder escape sequences, newlines and 3000
// characters, renewed in year 9999 for 2^31-1 seconds — is malformed: the
// plan notes it, the apply exits 1 (as for any lease held) saying who last
// wrote it and the command that removes it, with no raw control byte on
// stdout or stderr and nothing written; removed as told, the apply goes
// through.
func TestForgedLease(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	chart := func(version string) string {
		return writeChart(t, "app", version, map[string]string{"cm.yaml": configMap(false, version)})
	}
	c.Helm(t, "install", "app", chart("1.0.0"), "-n", ns)
	holder := "mallory\x1b]0;pwned\x07\x1b]52;c;Y3VybA==\x1b\\\x1b[2J\r\nError: forged " + strings.Repeat("h", 3000)
	duration := int32(1<<31 - 1)
	renew := metav1.NewMicroTime(time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC))
	_, err := c.Clientset(t).CoordinationV1().Leases(ns).Create(t.Context(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: releasestate.LeaseName("app")},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &duration, RenewTime: &renew},
	}, metav1.CreateOptions{FieldManager: "forger"})
	if err != nil {
		t.Fatalf("forging the Lease: %v", err)
	}
	says := []string{"the Lease " + ns + "/safe-upgrade.app is malformed: its renewTime 9999-12-31T23:59:59Z is in the future, and its leaseDurationSeconds 2147483647 is more than the 30 this tool writes",
		`last written by "forger" (Update) at `, "kubectl delete lease -n " + ns + " safe-upgrade.app", `mallory\x1b]0;pwned\a`, "…[+"}
	for _, format := range []string{"text", "json", "markdown"} {
		plan := run(t, c, "app", chart("2.0.0"), "-n", ns, "--dry-run", "-o", format)
		if plan.Code != 0 {
			t.Errorf("-o %s plan: exit %d, want 0\n%s", format, plan.Code, plan.Stderr)
		}
		switch format { // JSON quotes the note once more, Markdown escapes its punctuation
		case "text":
			saysAll(t, "-o text plan", plan.Stdout, says...)
		case "markdown":
			saysAll(t, "-o markdown plan", plan.Stdout, says[:3]...)
		}
		noRawControl(t, map[string]string{"-o " + format + " stdout": plan.Stdout, "-o " + format + " stderr": plan.Stderr})
	}
	applied := run(t, c, "app", chart("2.0.0"), "-n", ns)
	if applied.Code != 1 {
		t.Fatalf("apply: exit %d, want 1\n%s", applied.Code, applied.Stderr)
	}
	saysAll(t, "apply's stderr", applied.Stderr, append(says, "nothing was written")...)
	noRawControl(t, map[string]string{"apply's stdout": applied.Stdout, "apply's stderr": applied.Stderr})
	for _, never := range []string{"wait until it ends", "ago", "-2562047h"} {
		if strings.Contains(applied.Stderr, never) {
			t.Errorf("apply's stderr says %q:\n%s", never, applied.Stderr)
		}
	}
	if len(applied.Stderr) > 8000 {
		t.Errorf("apply's stderr is %d bytes: the holder text is not bounded", len(applied.Stderr))
	}
	if revs := releaseHistory(t, c, ns, 1); revs[0].Status != "deployed" {
		t.Errorf("the refused apply changed the release: %+v", revs)
	}
	mustBin(t, c, c.Kubectl, "delete", "lease", "-n", ns, "safe-upgrade.app")
	if r := run(t, c, "app", chart("2.0.0"), "-n", ns); r.Code != 0 {
		t.Errorf("apply once the Lease is removed: exit %d\n%s", r.Code, r.Stderr)
	}
}

// TestHostileImageThroughTheWatch (issue 40): an image name carrying a
// Secret value of the release, escape sequences and a 20 000-byte line
// (kwok fails its pull: the tag is :pull-error) reaches the watch's
// progress lines, the Error: line and the failed revision's description in
// `helm history` masked, escaped and bounded.
func TestHostileImageThroughTheWatch(t *testing.T) {
	const secret = "image-canary-secret-5e0d"
	c := testcluster.Get(t)
	c.RequireOwnCluster(t) // image tags fail only under kwok's stages
	ns := c.Namespace(t)
	// The image comes from the values as JSON: YAML refuses raw control
	// characters in the manifest, and toJson escapes the C0 ones (the
	// C1 controls and DEL it leaves raw, which YAML refuses too).
	image := "registry.example/" + secret + "/\x1b]0;pwned\x07\x1b]52;c;Y3VybA==\x1b\\\x1b[2J\x1b[31mred\r\n\b\x00\u202egnp" + strings.Repeat("L", 20000) + ":pull-error"
	chart := func(version string) string {
		return writeChart(t, "app", version, map[string]string{
			"d.yaml": strings.Replace(deployment("web", "IMAGE", "RollingUpdate", 1), `"IMAGE"`, "{{ .Values.image | toJson }}", 1),
			"s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: " + secret + "}\n",
		})
	}
	c.Helm(t, "install", "app", chart("1.0.0"), "-n", ns, "--set", "image=nginx:1.25", "--wait", "--timeout", "5m")
	// YAML's double-quoted escapes are Go's (\x1b, \u202e, …).
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("image: "+strconv.QuoteToASCII(image)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, c, "app", chart("1.1.0"), "-n", ns, "-f", values)
	if r.Code != 1 {
		t.Fatalf("exit %d, want 1\n%.3000s", r.Code, r.Stderr)
	}
	// The image is cut before "cannot be pulled (ImagePullBackOff)".
	saysAll(t, "stderr", r.Stderr, "Deployment.apps/"+ns+"/web: failed", ": image registry.example/(sensitive: hmac-sha256:", `\x1b]0;pwned\a\x1b]52;c;`, "(sensitive: hmac-sha256:", "…[+",
		`release "app" revision 2 was applied, but its rollout failed: Deployment.apps/`+ns+"/web failed")
	description := releaseHistory(t, c, ns, 2)[1].Description
	// Within its budget (issue 54): the start of the reason, escaped.
	saysAll(t, "revision 2's description", description, "Deployment.apps/"+ns+"/web failed")
	if len(description) > 300 {
		t.Errorf("revision 2's description is %d bytes, over its budget", len(description))
	}
	outputs := map[string]string{"stdout": r.Stdout, "stderr": r.Stderr, "revision 2's description": description}
	noRawControl(t, outputs)
	for what, text := range outputs {
		if strings.Contains(text, secret) {
			t.Errorf("%s holds the Secret value", what)
		}
	}
	for _, line := range strings.Split(r.Stderr, "\n") {
		if strings.HasPrefix(line, "Deployment.apps/") && len(line) > 2200 {
			t.Errorf("a progress line of %d bytes: %.200s", len(line), line)
		}
	}
	if len(description) > 20000 {
		t.Errorf("revision 2's description is %d bytes", len(description))
	}
}

// TestKilledHolderOnThisHost (issue 39): the Lease of an apply killed on
// this host (SIGKILL: it releases nothing) is not "an apply of this release
// is running": the plan says its holder no longer runs and when the lease
// is stale. The kill lands soon after the Lease is taken, before or after
// Helm writes the pending revision; either way the plan says it
// (TestKilledHolderPendingRevision pins the second).
func TestKilledHolderOnThisHost(t *testing.T) {
	c := testcluster.Get(t)
	ns, chart, p, holder := applyHoldingLease(t, c)
	p.Stop(t, syscall.SIGKILL)
	plan := run(t, c, "app", chart("3.0.0", ""), "-n", ns, "--dry-run")
	saysAll(t, "plan after the kill", plan.Stdout+plan.Stderr, "is held by "+holder+" running", "whose process ran on this host and no longer runs", "the lease is stale in ", "then an apply or --recover takes it over")
	if strings.Contains(plan.Stdout+plan.Stderr, "an apply of this release is running") {
		t.Errorf("the plan says an apply is running:\n%s\n%s", plan.Stdout, plan.Stderr)
	}
}

// TestKilledHolderPendingRevision: killed once Helm has written the
// pending-upgrade revision (its pre-upgrade hook waiting), the plan refuses
// the pending release, as Helm would, and says what the Lease says of the
// run that left it pending: its process ran on this host and no longer
// runs, and when an apply or --recover takes over.
func TestKilledHolderPendingRevision(t *testing.T) {
	c := testcluster.Get(t)
	ns, chart, p, holder := applyHoldingLease(t, c)
	testcluster.Eventually(t, "revision 2 pending-upgrade", func() (bool, string) {
		history := c.Helm(t, "history", "app", "-n", ns, "-o", "json")
		return strings.Contains(history, `"status":"pending-upgrade"`), history
	})
	p.Stop(t, syscall.SIGKILL)
	plan := run(t, c, "app", chart("3.0.0", ""), "-n", ns, "--dry-run")
	if plan.Code != 1 {
		t.Fatalf("exit %d, want 1 (the release is pending)\n%s\n%s", plan.Code, plan.Stdout, plan.Stderr)
	}
	saysAll(t, "plan after the kill", plan.Stderr, "is pending-upgrade at revision 2", "is held by "+holder+" running",
		"whose process ran on this host and no longer runs", "the lease is stale in ", "then an apply or --recover takes it over")
}
