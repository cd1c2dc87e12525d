package e2e

import (
	"reflect"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestHelm4UnchangedSendsNoDryRun (issue 28): planning an unchanged Helm 4
// release (server-side apply) decides every object a no-op from its
// managed fields, sends no dry-run request (the --debug stage line says 0,
// the audit log shows none), and gives the verdicts the server gives when
// asked about each (--server-dry-run=all).
func TestHelm4UnchangedSendsNoDryRun(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	chart := bumpChart(t, "1.0.0")
	mustBin(t, c, c.Helm4, "install", "app", chart, "-n", ns)

	before := auditMark(t, c)
	local, r := planJSON(t, c, "app", chart, "-n", ns, "--debug")
	if r.Code != 0 {
		t.Fatalf("exit %d\n%s", r.Code, r.Stderr)
	}
	if !strings.Contains(r.Stderr, "; 0 dry-run request(s)") {
		t.Errorf("--debug does not say 0 dry-run requests:\n%s", r.Stderr)
	}
	if n := dryRunPatches(t, c, ns, before); len(n) != 0 {
		t.Errorf("dry-run patches sent for an unchanged Helm 4 release: %v\n%s", n, r.Stderr)
	}
	assertOnlyDryRunWrites(t, c, ns, before)

	asked, r := planJSON(t, c, "app", chart, "-n", ns, "--server-dry-run=all")
	if r.Code != 0 {
		t.Fatalf("--server-dry-run=all: exit %d\n%s", r.Code, r.Stderr)
	}
	for _, o := range bumped {
		l, a := local.change(t, o.kind, o.name), asked.change(t, o.kind, o.name)
		if l.Action != "noop" || l.Prediction != "managed-fields" || a.Prediction != "server" {
			t.Errorf("%s/%s: %s, prediction %q then %q; want noop, managed-fields then server", o.kind, o.name, l.Action, l.Prediction, a.Prediction)
		}
		if !reflect.DeepEqual(verdict(l), verdict(a)) {
			t.Errorf("%s/%s: local and server verdicts differ:\nlocal  %+v\nserver %+v", o.kind, o.name, l, a)
		}
	}
}
