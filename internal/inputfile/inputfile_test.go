//go:build unix

package inputfile

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRead feeds Read what an attacker who can write a file in the working
// directory plants instead of it: each is refused promptly, naming the
// file, what it is and the limit; a regular file within the limit is read.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	write := func(name, content string) string {
		if err := os.WriteFile(path(name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path(name)
	}
	link := func(name, target string) string {
		if err := os.Symlink(target, path(name)); err != nil {
			t.Fatal(err)
		}
		return path(name)
	}
	fifo := path("fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := path("sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ok := write("ok.yaml", "- kind: StatefulSet\n")
	big := write("big.yaml", strings.Repeat("x", 2048))
	if err := os.Mkdir(path("dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		want       string // "" for success
		is         error
	}{
		{"regular", ok, "", nil},
		{"link to a regular file", link("ok-link", ok), "", nil},
		{"exactly the limit", write("limit", strings.Repeat("x", 1000)), "", nil},
		{"link to /dev/zero", link("zero", "/dev/zero"), `zero (a link to "/dev/zero"): a character device, not a regular file (an ack file must be one)`, ErrNotRegular},
		{"/dev/zero", "/dev/zero", "/dev/zero: a character device, not a regular file", ErrNotRegular},
		{"named pipe", fifo, "fifo: a named pipe (FIFO), not a regular file", ErrNotRegular},
		{"link to a named pipe", link("fifo-link", fifo), "a named pipe (FIFO), not a regular file", ErrNotRegular},
		{"directory", path("dir"), "dir: a directory, not a regular file", ErrNotRegular},
		{"socket", sock, "sock: a socket, not a regular file", ErrNotRegular},
		{"over the limit", big, "big.yaml: 2 KiB, over the limit of 1000 bytes for an ack file", ErrTooLarge},
		{"missing", path("missing"), "missing: no such file or directory", os.ErrNotExist},
		{"dangling link", link("dangling", path("nowhere")), "dangling: no such file or directory", os.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := Read(tc.path, "an ack file", 1000)
			if tc.want == "" {
				if err != nil || len(data) == 0 {
					t.Fatalf("Read(%s) = %d bytes, %v; want its content", tc.path, len(data), err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), tc.path) || !errors.Is(err, tc.is) {
				t.Fatalf("Read(%s) error %v; want one starting with the path, containing %q, being %v", tc.path, err, tc.want, tc.is)
			}
			if err := Check(tc.path, "an ack file", 1000); err == nil {
				t.Errorf("Check(%s) = nil; want the error Read gave", tc.path)
			}
		})
	}
}

// TestReadAtMost: a stream is read whole up to the limit, and refused one
// byte beyond it.
func TestReadAtMost(t *testing.T) {
	for _, tc := range []struct {
		n    int
		fail bool
	}{{0, false}, {10, false}, {11, true}} {
		data, err := ReadAtMost(strings.NewReader(strings.Repeat("a", tc.n)), 10)
		if tc.fail != (err != nil) || (!tc.fail && len(data) != tc.n) || (tc.fail && !errors.Is(err, ErrTooLarge)) {
			t.Errorf("%d bytes, limit 10: %d bytes, %v", tc.n, len(data), err)
		}
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{812: "812 bytes", 1 << 20: "1 MiB", 50 * 1000 * 1000: "47.7 MiB", 1536: "1.5 KiB", 1 << 30: "1 GiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q; want %q", n, got, want)
		}
	}
}
