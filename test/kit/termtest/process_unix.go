//go:build unix

package termtest

import (
	"os/exec"
	"syscall"
	"testing"
)

// Start starts cmd on the terminal as a person's shell does: its standard
// streams on the TTY, in a session of its own whose controlling terminal
// the TTY is, so that a key Type sends (Ctrl-C: "\x03") reaches it as the
// terminal's line discipline delivers it (SIGINT to its process group).
func (tm *Terminal) Start(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tm.TTY, tm.TTY, tm.TTY
	// Ctty is the child's descriptor of the TTY: its standard input.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
}

// Type sends s to what runs on the terminal as keys a person types:
// "demo\r" answers a prompt, "\x03" is Ctrl-C.
func (tm *Terminal) Type(t testing.TB, s string) {
	t.Helper()
	if _, err := tm.ptmx.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}
