// Package inputfile is the one way the tool reads a file someone else may
// have written (an ack file, a saved plan, an identity, a values file in a
// CI workspace): symbolic links followed, then a regular file required,
// opened without blocking (a named pipe is refused, not waited on), and read
// up to a limit that fits the file's purpose. A link to /dev/zero or a
// 1 GiB file is an error naming the file, what it is and the limit, never an
// out-of-memory crash or a hang.
package inputfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// The limits by purpose: each well above what the tool itself writes or a
// user keeps in such a file, and far below what would strain memory.
const (
	// AckFileMax: an entry is about 150 bytes, so about 7000 entries.
	AckFileMax = 1 << 20
	// AckEntriesMax bounds the entries of an ack file (each acknowledges
	// a destructive change by name; a release has far fewer).
	AckEntriesMax = 10000
	// PlanMax: a saved plan holds the release's manifest (Helm's own record
	// of it must fit a 1 MiB Secret, gzipped), the live state of the
	// objects it changes and its report in three formats.
	PlanMax = 256 << 20
	// IdentityMax: an age identity file holds a few keys of 74 characters.
	IdentityMax = 64 << 10
	// ValuesMax: a values file or a --set-file file.
	ValuesMax = 64 << 20
	// ManifestMax: a rendered manifest (--from-manifest), or a release
	// record decompressed.
	ManifestMax = 256 << 20
	// SmallMax: a rules file, a CA bundle, a plugin's plugin.yaml, a chart
	// template read for its line numbers.
	SmallMax = 16 << 20
)

// ErrNotRegular is the cause of an error for a path that is not a regular
// file (after its links), ErrTooLarge of one over its limit.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("over the limit")
)

// Read returns the content of the regular file at path, at most max bytes;
// purpose names the file in the errors ("an ack file"). Every error starts
// with path.
func Read(path, purpose string, max int64) ([]byte, error) {
	f, err := open(path, purpose, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := ReadAtMost(f, max)
	if errors.Is(err, ErrTooLarge) {
		// It grew after the size was checked.
		return nil, tooLarge(path, purpose, max, "more than that")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPath(err))
	}
	return data, nil
}

// Check refuses path as Read would, without reading it: for files another
// library reads (Helm's values files).
func Check(path, purpose string, max int64) error {
	f, err := open(path, purpose, max)
	if err != nil {
		return err
	}
	return f.Close()
}

// ReadAtMost reads r to its end, at most max bytes (ErrTooLarge beyond):
// for streams that have no size to check first (a decrypted plan, a
// decompressed record).
func ReadAtMost(r io.Reader, max int64) ([]byte, error) {
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if n > max {
		return nil, fmt.Errorf("%w of %s", ErrTooLarge, Size(max))
	}
	return buf.Bytes(), nil
}

// open opens path for reading once it is known to be a regular file of at
// most max bytes. The type is checked before opening (a device is never
// opened), and again on the opened file (a swap in between is caught); the
// open never blocks (openFlags), so a named pipe swapped in is refused too.
func open(path, purpose string, max int64) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPath(err))
	}
	if err := check(path, purpose, max, fi); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPath(err))
	}
	if fi, err = f.Stat(); err == nil {
		err = check(path, purpose, max, fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// check says what is wrong with fi for purpose: its type or its size.
func check(path, purpose string, max int64, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s%s: %s, %w (%s must be one)", path, linkTarget(path), typeOf(fi.Mode()), ErrNotRegular, purpose)
	}
	if fi.Size() > max {
		return tooLarge(path, purpose, max, Size(fi.Size()))
	}
	return nil
}

func tooLarge(path, purpose string, max int64, found string) error {
	return fmt.Errorf("%s: %s, %w of %s for %s", path, found, ErrTooLarge, Size(max), purpose)
}

// linkTarget names what a link at path points to (" (a link to /dev/zero)"),
// "" for anything else.
func linkTarget(path string) string {
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return ""
	}
	if target, err := os.Readlink(path); err == nil {
		return fmt.Sprintf(" (a link to %q)", target)
	}
	return " (a link)"
}

// typeOf names a file's type as a user would say it.
func typeOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "a file of type " + m.Type().String()
}

// Size is n bytes said briefly: "1 MiB", "50.0 MiB", "812 bytes".
func Size(n int64) string {
	switch {
	case n >= 1<<30:
		return trimZero(float64(n)/(1<<30)) + " GiB"
	case n >= 1<<20:
		return trimZero(float64(n)/(1<<20)) + " MiB"
	case n >= 1<<10:
		return trimZero(float64(n)/(1<<10)) + " KiB"
	}
	return fmt.Sprintf("%d bytes", n)
}

func trimZero(f float64) string {
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%.1f", f)
}

// unwrapPath drops an *fs.PathError's own "open PATH:" (the errors here
// name the path once, first).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
