//go:build unix

package render

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"helm.sh/helm/v3/pkg/cli/values"
)

// TestCheckValueFiles: a values file that is a named pipe or a link to
// /dev/zero is refused before Helm reads it (which would block, or read
// until memory runs out); stdin and URLs are left to Helm.
func TestCheckValueFiles(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(ok, []byte("a: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		v    values.Options
		want string // "" for none
	}{
		{"regular, stdin and a URL", values.Options{ValueFiles: []string{ok, "-", "https://example.com/v.yaml"}, FileValues: []string{"a=" + ok}}, ""},
		{"named pipe", values.Options{ValueFiles: []string{ok, fifo}}, "--values " + fifo + ": a named pipe (FIFO), not a regular file (a values file must be one)"},
		{"link to /dev/zero by --set-file", values.Options{FileValues: []string{"a=" + ok + ",b=" + zero}}, "--set-file " + zero + ` (a link to "/dev/zero"): a character device`},
		{"missing", values.Options{ValueFiles: []string{filepath.Join(dir, "nope.yaml")}}, "nope.yaml: no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkValueFiles(tc.v)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("checkValueFiles = %v; want %q", err, tc.want)
			}
		})
	}
}
