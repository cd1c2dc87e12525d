// Package termtest runs what a test writes to a terminal through a
// pseudo-terminal into a terminal emulator (github.com/charmbracelet/x/vt),
// so that the test checks what a person sees: the screen and the
// scrollback.
package termtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/charmbracelet/x/vt"
	"github.com/creack/pty"
	"golang.org/x/term"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// Terminal is a pseudo-terminal whose master feeds an emulator.
type Terminal struct {
	// TTY is the terminal's end a command writes to.
	TTY  *os.File
	ptmx *os.File
	// stall, held, keeps the emulator from taking more (see Stall).
	stall sync.Mutex
	mu    sync.Mutex
	emu   *vt.Emulator
	// read is what the emulator took, written what Writer wrote (each
	// "\n" counted twice: the line discipline writes "\r\n").
	read, written int
	ended         chan struct{}
}

// Open opens a terminal of cols columns and rows rows, closed when the
// test ends; the test is skipped where there are no pseudo-terminals.
func Open(t testing.TB, cols, rows int) *Terminal {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if errors.Is(err, pty.ErrUnsupported) {
		t.Skip("no pseudo-terminal here:", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	tm := &Terminal{TTY: tty, ptmx: ptmx, emu: vt.NewEmulator(cols, rows), ended: make(chan struct{})}
	tm.emu.SetScrollbackSize(100000)
	if err := pty.Setsize(ptmx, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		t.Fatal(err)
	}
	go tm.feed()
	t.Cleanup(func() {
		tty.Close()
		ptmx.Close()
	})
	return tm
}

// feed hands what the terminal shows to the emulator until the master
// reads an error (the slave closed and all was read).
func (tm *Terminal) feed() {
	defer close(tm.ended)
	buf := make([]byte, 4096)
	for {
		n, err := tm.ptmx.Read(buf)
		if n > 0 {
			tm.stall.Lock()
			tm.mu.Lock()
			_, _ = tm.emu.Write(buf[:n])
			tm.read += n
			tm.mu.Unlock()
			tm.stall.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// Size is the terminal's size as a command reads it, from the TTY.
func (tm *Terminal) Size() (cols, rows int) {
	cols, rows, err := term.GetSize(int(tm.TTY.Fd()))
	if err != nil {
		return 0, 0
	}
	return cols, rows
}

// Writer writes to the TTY, counting what Drain waits for.
func (tm *Terminal) Writer() io.Writer { return writer{tm} }

type writer struct{ tm *Terminal }

func (w writer) Write(p []byte) (int, error) {
	n, err := w.tm.TTY.Write(p)
	w.tm.mu.Lock()
	w.tm.written += n + bytes.Count(p[:n], []byte("\n"))
	w.tm.mu.Unlock()
	return n, err
}

// Drain waits until the emulator took all that Writer wrote.
func (tm *Terminal) Drain(t testing.TB) {
	t.Helper()
	testcluster.Eventually(t, "all written on the terminal emulator", func() (bool, string) {
		tm.mu.Lock()
		defer tm.mu.Unlock()
		return tm.read >= tm.written, fmt.Sprintf("it took %d of %d bytes", tm.read, tm.written)
	})
}

// Resize resizes the terminal, as a person drags its window: the
// emulator does not wrap again what it shows (as xterm), and what it
// takes after is drawn at the new size.
func (tm *Terminal) Resize(t testing.TB, cols, rows int) {
	t.Helper()
	tm.mu.Lock()
	defer tm.mu.Unlock()
	if err := pty.Setsize(tm.ptmx, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)}); err != nil {
		t.Fatal(err)
	}
	tm.emu.Resize(cols, rows)
}

// Stall keeps the emulator from drawing what is written until resume is
// called: it waits in the pseudo-terminal, as output a busy terminal has
// yet to draw when its window is resized (Resize works meanwhile).
func (tm *Terminal) Stall() (resume func()) {
	tm.stall.Lock()
	var once sync.Once
	return func() { once.Do(tm.stall.Unlock) }
}

// End closes the TTY, once whatever wrote to it is done, and waits until
// the emulator took all it showed.
func (tm *Terminal) End(t testing.TB) {
	t.Helper()
	tm.TTY.Close()
	testcluster.Eventually(t, "the terminal emulator at the end of the output", func() (bool, string) {
		select {
		case <-tm.ended:
			return true, ""
		default:
			return false, "still reading"
		}
	})
}

// Lines are the screen's rows and the scrollback's, right-trimmed.
func (tm *Terminal) Lines() (screen, scrollback []string) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	for _, l := range tm.emu.Scrollback().Lines() {
		scrollback = append(scrollback, strings.TrimRight(l.String(), " "))
	}
	for _, l := range strings.Split(tm.emu.String(), "\n") {
		screen = append(screen, strings.TrimRight(l, " "))
	}
	return screen, scrollback
}
