//go:build unix

package savedplan

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestIdentityForms: SAFE_UPGRADE_PLAN_IDENTITY holds what age-keygen
// writes (its comment lines, blank lines, the key; as "$(cat key.txt)" or a
// CI secret hands it over, CRLF included) or a path to it; an identity file
// readable by group or others decrypts with one warning line, and a named
// pipe at the path is refused at once.
func TestIdentityForms(t *testing.T) {
	recipient, identity := newKey(t)
	path, _, _ := saveWith(t, Keys{Recipients: []string{recipient}})
	keygen := "# created: 2026-12-03T08:00:00Z\n# public key: " + recipient + "\n" + identity + "\n"
	dir := t.TempDir()
	file := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, identity, warn, err string
	}{
		{name: "age-keygen's output", identity: keygen},
		{name: "with blank lines and CRLF", identity: "\r\n" + strings.ReplaceAll(keygen, "\n", "\r\n\r\n")},
		{name: "the key alone", identity: identity},
		{name: "a private file", identity: file("private.txt", keygen, 0o600)},
		{name: "a file others can read", identity: file("shared.txt", keygen, 0o644),
			warn: "WARNING: SAFE_UPGRADE_PLAN_IDENTITY: the identity file " + filepath.Join(dir, "shared.txt") + " is readable by group or others (mode 0644)"},
		{name: "a named pipe", identity: fifo, err: "nor a readable identity file: not a regular file"},
		{name: "comments without a key", identity: "# created: now\n# public key: " + recipient + "\n", err: "no age identity in it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var warnings bytes.Buffer
			keys := KeysFromEnv(func(k string) string {
				if k == EnvIdentity {
					return tc.identity
				}
				return ""
			}, nil, false)
			keys.Warnings = &warnings
			_, err := Verify(path, keys, "app", "prod")
			if tc.err != "" {
				refused(t, err, path, tc.err)
				if strings.Contains(err.Error(), identity) {
					t.Fatal("the error shows the key")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := warnings.String(); (tc.warn == "") != (got == "") || !strings.Contains(got, tc.warn) || strings.Count(got, "\n") > 1 {
				t.Errorf("warnings %q; want %q", got, tc.warn)
			}
		})
	}
}
