package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/helmtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestRollbackApplyMethod: Helm 4's helm rollback under --server-side=auto
// applies with the method recorded in the revision rolled back to, not the
// last one's; --server-side=false and true decide. For a release whose
// revisions switched method (helm4 install is server-side, helm4 upgrade
// --server-side=false|true moves it), the plan names the method Helm 4
// uses, and the applied rollback leaves the same record (apply method,
// status, description), object and managed fields as helm4 rollback with
// the same flags on a twin release.
func TestRollbackApplyMethod(t *testing.T) {
	c := testcluster.Get(t)
	for _, tc := range []struct {
		name       string
		install    []string // helm4 install's flags (server-side by default)
		upgrade    []string // helm4 upgrade's, to revision 2
		rollback   []string // both rollbacks' flags
		wantMethod string
	}{
		{"server-side since, auto follows revision 1's client-side", []string{"--server-side=false"}, []string{"--server-side=true"}, nil, "csa"},
		{"client-side since, auto follows revision 1's server-side", nil, []string{"--server-side=false"}, nil, "ssa"},
		{"server-side=false on a server-side release", nil, nil, []string{"--server-side=false"}, "csa"},
		{"server-side=true, force-conflicts on a client-side release", []string{"--server-side=false"}, []string{"--server-side=false"}, []string{"--server-side=true", "--force-conflicts"}, "ssa"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns, twin := c.Namespace(t), c.Namespace(t)
			chart := writeChart(t, "r", "1.0.0", map[string]string{"cm.yaml": conflictTemplate})
			for _, n := range []string{ns, twin} {
				mustBin(t, c, c.Helm4, append([]string{"install", "r", chart, "-n", n}, tc.install...)...)
				mustBin(t, c, c.Helm4, append([]string{"upgrade", "r", chart, "-n", n, "--set", "other=2"}, tc.upgrade...)...)
			}

			p, r := planJSON(t, c, append([]string{"rollback", "r", "1", "-n", ns, "--detailed-exitcode"}, tc.rollback...)...)
			if r.Code != 3 || p.Release.ApplyMethod != tc.wantMethod {
				t.Fatalf("rollback --dry-run: exit %d, apply method %q; want 3, %s\n%s", r.Code, p.Release.ApplyMethod, tc.wantMethod, r.Stderr)
			}
			if cm := p.change(t, "ConfigMap", "r-cm"); cm.Action != "update" || cm.Class != "in-place" {
				t.Errorf("ConfigMap r-cm: %s %s, want an in-place update", cm.Action, cm.Class)
			}
			if r := run(t, c, append([]string{"rollback", "r", "1", "-n", ns}, tc.rollback...)...); r.Code != 0 {
				t.Fatalf("rollback: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
			}
			mustBin(t, c, c.Helm4, append([]string{"rollback", "r", "1", "-n", twin}, tc.rollback...)...)

			cs := c.Clientset(t)
			got, want := helmtest.ReadRecord(t, cs, ns, "r", 3), helmtest.ReadRecord(t, cs, twin, "r", 3)
			// Helm 3's action, which applies a client-side rollback, records
			// no apply method; Helm 4 reads none as client-side.
			method := func(m string) string {
				if m == "" {
					return "csa"
				}
				return m
			}
			if method(got.ApplyMethod) != tc.wantMethod || method(want.ApplyMethod) != tc.wantMethod || got.Info.Status != want.Info.Status ||
				!strings.HasPrefix(got.Info.Description, want.Info.Description+"; safe-upgrade") {
				t.Errorf("revision 3: tool's apply_method %q, %s, %q; helm4's %q, %s, %q; want %s", got.ApplyMethod, got.Info.Status, got.Info.Description,
					want.ApplyMethod, want.Info.Status, want.Info.Description, tc.wantMethod)
			}
			gotData, gotFields := rcm(t, c, ns)
			wantData, wantFields := rcm(t, c, twin)
			if fmt.Sprint(gotData) != fmt.Sprint(wantData) || gotData["other"] != "x" {
				t.Errorf("r-cm data: tool %v, helm4 %v, want other=x", gotData, wantData)
			}
			if strings.Join(gotFields, "\n") != strings.Join(wantFields, "\n") {
				t.Errorf("r-cm managed fields:\ntool:\n%s\nhelm4:\n%s", strings.Join(gotFields, "\n"), strings.Join(wantFields, "\n"))
			}
		})
	}
}

// TestRollbackHelm3Flags: Helm 3's helm rollback has neither --server-side
// nor --force-conflicts; on a release only Helm 3 wrote the tool refuses
// both (exit 1, naming the flag, nothing written), and rolls back without
// them as Helm 3 does.
func TestRollbackHelm3Flags(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	chart := writeChart(t, "r", "1.0.0", map[string]string{"cm.yaml": conflictTemplate})
	mustBin(t, c, c.Helm3, "install", "r", chart, "-n", ns)
	mustBin(t, c, c.Helm3, "upgrade", "r", chart, "-n", ns, "--set", "other=2")
	for _, flags := range [][]string{{"--server-side=true"}, {"--server-side=false"}, {"--force-conflicts"}} {
		before := len(c.AuditEvents(t, nil))
		r := run(t, c, append([]string{"rollback", "r", "1", "-n", ns}, flags...)...)
		flag, _, _ := strings.Cut(flags[0], "=")
		if r.Code != 1 || !strings.Contains(r.Stderr, flag) || !strings.Contains(r.Stderr, `release "r" is a Helm 3 release`) {
			t.Errorf("rollback %s: exit %d, want 1 naming %s and the Helm 3 release\n%s", flags[0], r.Code, flag, r.Stderr)
		}
		if w := toolWrites(t, c, ns, before); len(w) > 0 {
			t.Errorf("the refused rollback %s wrote to the cluster: %+v", flags[0], w)
		}
	}
	if r := run(t, c, "rollback", "r", "1", "-n", ns); r.Code != 0 {
		t.Fatalf("rollback: exit %d\n%s", r.Code, r.Stderr)
	}
	if rec := helmtest.ReadRecord(t, c.Clientset(t), ns, "r", 3); rec.ApplyMethod != "" {
		t.Errorf("rollback of a Helm 3 release: apply_method %q, want none (Helm 3's)", rec.ApplyMethod)
	}
}
