package shim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/shimtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestLoopUnderClearedEnvironment: SAFE_UPGRADE_HELM names a wrapper that
// runs the shim again under `env -i` (as sudo and some CI runners clear the
// environment), which removes the shim's environment guard. The shim must
// still stop, with exit 1 and one line saying what it found, instead of
// handing the command to itself forever: a wrapper that execs the shim by
// its path is refused by its content; one that hides the path and runs the
// shim as a child is refused once it is running a few levels deep.
func TestLoopUnderClearedEnvironment(t *testing.T) {
	c := testcluster.Get(t)
	dirs := tool.Dirs(t, c, c.Helm3)
	shimHelm := filepath.Join(dirs.Shim, "helm")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "shim-path"), []byte(shimHelm), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, script, want string
	}{
		{"exec by path", `exec env -i SAFE_UPGRADE_HELM="$0" "` + shimHelm + `" "$@"`,
			"is a script that runs this shim (it names " + shimHelm + ")"},
		{"child by a hidden path", `shim=$(cat "$(dirname "$0")/shim-path")` + "\n" + `env -i PATH=/usr/bin:/bin SAFE_UPGRADE_HELM="$0" "$shim" "$@"`,
			"already runs in 3 processes above this one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wrapper := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if err := os.WriteFile(wrapper, []byte("#!/bin/sh\n"+tc.script+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			env := shimtest.Env(t, c, []string{dirs.Shim}, "SAFE_UPGRADE_HELM="+wrapper)
			r := shimtest.Run(t, t.TempDir(), env, shimHelm, "helm", "version")
			if r.Code != 1 || !strings.Contains(r.Stderr, "SAFE_UPGRADE_HELM="+wrapper+" ") || !strings.Contains(r.Stderr, tc.want) ||
				strings.Count(r.Stderr, "Error: ") != 1 {
				t.Errorf("want exit 1 and one error line naming %s and saying %q\n%s", wrapper, tc.want, r)
			}
		})
	}
}
