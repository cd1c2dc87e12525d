// Package filetree writes a tree of small files for a test: a GitOps
// checkout, a chart.
package filetree

import (
	"os"
	"path/filepath"
	"testing"
)

// Write writes files (slash-separated relative path → content) under a new
// temporary directory of t and returns it.
func Write(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
