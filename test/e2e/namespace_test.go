package e2e

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestInstallIntoMissingNamespace (issue 25): a plan of an install into a
// namespace that does not exist is blocked (exit 2), naming the namespace
// and the flag that fixes it; with --create-namespace it passes (exit 0).
// The plan writes nothing either way: the namespace is still missing.
func TestInstallIntoMissingNamespace(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t) + "-absent" // unique, never created
	chart := writeChart(t, "lonely", "1.0.0", map[string]string{"cm.yaml": configMap(false, "a")})
	r := run(t, c, "lonely", chart, "-n", ns, "--install", "--dry-run")
	if r.Code != 2 || !strings.Contains(r.Stderr, `namespace "`+ns+`" does not exist`) || !strings.Contains(r.Stderr, "--create-namespace") {
		t.Errorf("without --create-namespace: exit %d, want 2 naming namespace %s and --create-namespace\n%s\n%s", r.Code, ns, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "Blocked, whatever is acknowledged:") {
		t.Errorf("the report does not show the blocker:\n%s", r.Stdout)
	}
	r = run(t, c, "lonely", chart, "-n", ns, "--install", "--create-namespace", "--dry-run")
	if r.Code != 0 || strings.Contains(r.Stdout+r.Stderr, "does not exist") {
		t.Errorf("with --create-namespace: exit %d, want 0\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if _, err := c.Clientset(t).CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s after the plans: %v, want not found (a plan writes nothing)", ns, err)
	}
}
