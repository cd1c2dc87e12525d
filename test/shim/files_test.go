package shim

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/shimtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestHostileInputFiles plants, where the tool reads a file (the working
// directory's ack file, --ack-file, -f, --plan, show-plan), what someone who
// can write a file there would plant: a link to /dev/zero, a named pipe with
// no writer, a directory, a file far over its limit. Each run, through the
// real binaries, ends with exit 1 and one error line naming the file, what
// it is and the limit: no hang (a named pipe is not waited on; the test
// binary's deadline would catch one), no out-of-memory crash (Go's exit 2,
// which reads as "blocked by the gate"), no goroutine stack, no write.
func TestHostileInputFiles(t *testing.T) {
	c := testcluster.Get(t)
	dirs := tool.Dirs(t, c, c.Helm3)
	dispatcher, err := filepath.EvalSymlinks(filepath.Join(dirs.Shim, "helm"))
	if err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(filepath.Dir(dispatcher), "helm-safe-upgrade")
	ns := c.Namespace(t)
	env := shimtest.Env(t, c, []string{dirs.Shim, dirs.Real})
	chart := shimtest.Chart(c, "demo")
	upgrade := []string{"upgrade", "--install", "demo", chart, "-n", ns}

	// plant makes what a case reads at path.
	zero := func(path string) error { return os.Symlink("/dev/zero", path) }
	fifo := func(path string) error { return syscall.Mkfifo(path, 0o644) }
	dir := func(path string) error { return os.Mkdir(path, 0o755) }
	sized := func(n int64) func(string) error {
		return func(path string) error { // sparse: the size is what counts
			f, err := os.Create(path)
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Truncate(n)
		}
	}
	const ackFile = ".safe-upgrade-acks.yaml"
	for _, tc := range []struct {
		name  string
		file  string // planted in the working directory
		plant func(string) error
		shim  bool // run as the drop-in helm (else the full tool)
		args  []string
		want  string
	}{
		{"ack file linked to /dev/zero", ackFile, zero, true, upgrade,
			ackFile + ` (a link to "/dev/zero"): a character device, not a regular file (an ack file must be one)`},
		{"ack file a named pipe", ackFile, fifo, true, upgrade,
			ackFile + ": a named pipe (FIFO), not a regular file"},
		{"ack file a directory", ackFile, dir, true, upgrade,
			ackFile + ": a directory, not a regular file"},
		{"ack file of 50 MB", ackFile, sized(50_000_000), true, upgrade,
			ackFile + ": 47.7 MiB, over the limit of 1 MiB for an ack file"},
		{"--ack-file a named pipe", "acks.yaml", fifo, false, append([]string{"demo", chart, "-n", ns, "--dry-run", "--ack-file"}, "acks.yaml"),
			"--ack-file acks.yaml: a named pipe (FIFO), not a regular file"},
		{"values file a named pipe", "values.yaml", fifo, true, append(upgrade, "-f", "values.yaml"),
			"--values values.yaml: a named pipe (FIFO), not a regular file (a values file must be one)"},
		{"values file linked to /dev/zero", "values.yaml", zero, true, append(upgrade, "-f", "values.yaml"),
			`--values values.yaml (a link to "/dev/zero"): a character device`},
		{"--plan linked to /dev/zero", "plan.age", zero, false, []string{"demo", chart, "-n", ns, "--plan", "plan.age"},
			`--plan plan.age (a link to "/dev/zero"): a character device, not a regular file (a saved plan must be one)`},
		{"show-plan a named pipe", "plan.age", fifo, false, []string{"show-plan", "plan.age"},
			"plan.age: a named pipe (FIFO), not a regular file"},
		{"show-plan of 1 GiB", "plan.age", sized(1 << 30), false, []string{"show-plan", "plan.age"},
			"plan.age: 1 GiB, over the limit of 256 MiB for a saved plan"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := t.TempDir()
			if err := tc.plant(filepath.Join(work, tc.file)); err != nil {
				t.Fatal(err)
			}
			events := len(c.AuditEvents(t, nil))
			var r result
			if tc.shim {
				r = shimtest.Run(t, work, env, filepath.Join(dirs.Shim, "helm"), "helm", tc.args...)
			} else {
				r = shimtest.Run(t, work, env, full, "helm-safe-upgrade", tc.args...)
			}
			if r.Code != 1 || !strings.Contains(r.Stderr, tc.want) || strings.Contains(r.Stderr, "goroutine ") ||
				strings.Count(r.Stderr, "Error: ") != 1 {
				t.Errorf("want exit 1 and one error line containing %q\n%s", tc.want, r)
			}
			if writes, _ := shimtest.ToolWroteSince(t, c, ns, events); len(writes) > 0 {
				t.Errorf("the tool wrote %q", writes)
			}
		})
	}
}
