package savedplan

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestWriteRace is the campaign's race on --plan-out: while the plan is
// written again and again (the file removed by the test before each, as a
// user's rerun finds it gone), someone plants a symbolic link at the path
// as fast as they can. Not one write may land in the link's target, in 100
// runs; the file left is the plan's, mode 0600.
func TestWriteRace(t *testing.T) {
	_, _, s := fixture(t)
	dir := t.TempDir()
	path, target := filepath.Join(dir, "plan.json"), filepath.Join(dir, "stolen")
	if err := os.WriteFile(target, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	planted := 0
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				if os.Symlink(target, path) == nil {
					planted++
				}
			}
		}
	}()
	written := 0
	for range 100 {
		os.Remove(path)
		if err := Write(path, s, clear); err == nil {
			written++
		} else if !strings.Contains(err.Error(), "a symbolic link; the plan is not written through it") {
			t.Errorf("Write: %v; want success, or the link refused", err)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("100 runs: %d written, %d links planted", written, planted)
	if data, err := os.ReadFile(target); err != nil || len(data) != 0 {
		t.Fatalf("the link's target holds %d bytes (%v): a plan was written through the link", len(data), err)
	}
	os.Remove(path)
	if err := os.WriteFile(path, []byte("old"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, s, clear); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the plan file over an existing 0666 file: %v, %v; want a regular file, mode 0600", fi.Mode(), err)
	}
	if _, err := Open(path, clear); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".plan.json.*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestWriteRefuses: a symbolic link or a directory at --plan-out's path is
// refused in one line naming the path; the link's target and the
// directory are left as they were.
func TestWriteRefuses(t *testing.T) {
	_, _, s := fixture(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	refused(t, Write(link, s, clear), link, "a symbolic link; the plan is not written through it")
	if data, _ := os.ReadFile(target); string(data) != "keep" {
		t.Errorf("the link's target now holds %q", data)
	}
	sub := filepath.Join(dir, "empty")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	refused(t, Write(sub, s, clear), sub, "a directory")
	if fi, err := os.Stat(sub); err != nil || !fi.IsDir() {
		t.Errorf("the directory at --plan-out is gone (%v)", err)
	}
}
