package filetree

import (
	"os"
	"path/filepath"
	"testing"
)

// Link makes name (slash-separated, under dir) a symbolic link to target,
// as a repository may hold one; t is skipped where links cannot be made.
func Link(t testing.TB, dir, name, target string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Skip("no symbolic links here:", err)
	}
}
