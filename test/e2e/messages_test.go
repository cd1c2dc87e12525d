package e2e

import (
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestInvalidValueNamesTheField: --set web.replicas=notanumber renders a
// Deployment whose spec.replicas is a string, beside another change (so the
// patch the server echoes is long). The server refuses it; the verdict
// (invalid) names the field and what the server expects there, with the
// server's own words, not the fragment "patch: int32".
func TestInvalidValueNamesTheField(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	chart := c.Root + "/testdata/charts/demo"
	c.Helm(t, "install", "demo", chart, "-n", ns)
	r := run(t, c, "demo", chart, "-n", ns, "--dry-run", "--set", "web.replicas=notanumber", "--set", "web.image.tag=1.27.4-notanumber-beside")
	want := "spec.replicas: the server expects int32 here, the chart sets a string"
	if r.Code != 2 || !strings.Contains(r.Stdout, "invalid  "+want) || !strings.Contains(r.Stderr, "cannot be acknowledged: "+want) ||
		strings.Contains(r.Stdout, "patch: int32") {
		t.Fatalf("exit %d; want 2 (blocked), the Deployment invalid saying %q\n%s\n%s", r.Code, want, r.Stdout, r.Stderr)
	}
}
