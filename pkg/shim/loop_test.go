package shim

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRealHelmLoops: a "real helm" that would run the shim again is refused
// without help from the environment, saying what was found: the tool's own
// file, or a script naming the shim's file (by a link to it, quoted, after
// env -i); a wrapper script that names only Helm's binary is the real helm.
func TestRealHelmLoops(t *testing.T) {
	root := t.TempDir()
	self := executable(t, filepath.Join(root, "dist", "helm"))
	tool := executable(t, filepath.Join(root, "dist", "helm-safe-upgrade"))
	link := filepath.Join(root, "bin", "helm")
	os.MkdirAll(filepath.Dir(link), 0o755)
	if err := os.Symlink(self, link); err != nil {
		t.Fatal(err)
	}
	real := executable(t, filepath.Join(root, "real", "helm"))
	script := func(name, body string) string {
		path := filepath.Join(root, "scripts", name)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	envI := script("env-i", `exec env -i SAFE_UPGRADE_HELM="$0" "`+link+`" "$@"`)
	viaTool := script("tool", "exec "+tool+" \"$@\"")
	wrapper := script("wrapper", "export HELM_DEBUG=1\nexec '"+real+"' \"$@\"")
	onPath := filepath.Join(root, "wrapped")
	os.MkdirAll(onPath, 0o755)
	os.Symlink(envI, filepath.Join(onPath, "helm"))

	for _, tt := range []struct {
		name, explicit, path string
		want, err            string
	}{
		{name: "env -i wrapper", explicit: envI, err: "SAFE_UPGRADE_HELM=" + envI + " is a script that runs this shim (it names " + link + ")"},
		{name: "script running the tool", explicit: viaTool, err: "is a script that runs this shim (it names " + tool + ")"},
		{name: "the tool itself", explicit: tool, err: "SAFE_UPGRADE_HELM=" + tool + " is the safe-upgrade tool"},
		{name: "env -i wrapper on PATH", path: onPath + string(os.PathListSeparator) + filepath.Dir(real), err: "the helm on PATH " + filepath.Join(onPath, "helm") + " is a script that runs this shim"},
		{name: "wrapper of the real helm", explicit: wrapper, want: wrapper},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Lookup{Self: self, Tool: tool, Explicit: tt.explicit, Path: tt.path}.RealHelm()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "no real helm found") {
					t.Fatalf("got %q, %v; want error %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestRunningAbove: the walk up the process tree finds this test binary in
// its own process (its command line names it) and ends at the root.
func TestRunningAbove(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if got := runningAbove(exe, os.Getpid()); len(got) != 1 || got[0] != "pid "+strconv.Itoa(os.Getpid()) {
		t.Errorf("runningAbove(this binary, own pid) = %v; want this process alone", got)
	}
	if got := runningAbove("/no/such/helm", os.Getpid()); len(got) != 0 {
		t.Errorf("runningAbove(a missing file) = %v", got)
	}
	stat := filepath.Join(t.TempDir(), "stat")
	os.WriteFile(stat, []byte("1234 (a b) (c)) S 42 1234 1234 0 -1\n"), 0o644)
	if got := parentOf(stat); got != 42 {
		t.Errorf("parentOf(a name with spaces and parentheses) = %d; want 42", got)
	}
}
