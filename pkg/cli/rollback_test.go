package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
)

// TestRollbackServerSideFlags: rollback takes Helm 4's --server-side
// (auto by default) and --force-conflicts into the plan request, and
// refuses what Helm 4's helm rollback refuses (a value other than
// auto/true/false, --force with --force-conflicts) with exit 1, before
// anything runs.
func TestRollbackServerSideFlags(t *testing.T) {
	for _, tc := range []struct {
		name           string
		args           []string
		serverSide     string
		forceConflicts bool
		err            string
	}{
		{"default", nil, "auto", false, ""},
		{"server-side false", []string{"--server-side=false"}, "false", false, ""},
		{"server-side true, force-conflicts", []string{"--server-side", "true", "--force-conflicts"}, "true", true, ""},
		{"bad value", []string{"--server-side=yes"}, "", false, `invalid --server-side "yes"`},
		{"force with force-conflicts", []string{"--force", "--force-conflicts"}, "", false, "--force-replace (--force) and --force-conflicts cannot be used together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errOut bytes.Buffer
			f := NewFactory(iostreams.Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &errOut})
			var got *RollbackOptions
			code := f.executeTree("helm-safe-upgrade", append([]string{"rollback", "db", "1"}, tc.args...), BuildInfo{Version: "test"}, func(opts any) error {
				got = opts.(*RollbackOptions)
				return got.Validate()
			})
			if tc.err != "" {
				if code != ExitError || !strings.Contains(errOut.String(), tc.err) {
					t.Fatalf("exit %d, want %d and %q in:\n%s", code, ExitError, tc.err, errOut.String())
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			r := got.Upgrade.Request.Render
			if r.ServerSide != tc.serverSide || r.ForceConflicts != tc.forceConflicts || got.Upgrade.Request.Rollback == nil {
				t.Errorf("plan request: --server-side %q --force-conflicts %v (rollback %v), want %q %v", r.ServerSide, r.ForceConflicts, got.Upgrade.Request.Rollback, tc.serverSide, tc.forceConflicts)
			}
		})
	}
}
