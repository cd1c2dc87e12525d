//go:build unix

package e2e

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/shimtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/termtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/toolbuild"
)

// Terminal size of the session (issue 54): a person's window.
const sessionCols, sessionRows = 120, 45

// TestTerminalSession (issue 54): the demo as a person runs it, each
// command a process of its own on a terminal of 120 columns and 45 rows:
// the upgrade to demo-v2 acknowledged at the prompt, its watch stopped with
// Ctrl-C (the database's claim is never bound: no storage provisioner), then
// status, log and the uninstall. The interrupted watch exits 1 saying so
// and that nothing failed because of it, and leaves the revision deployed
// in Helm's history; status and log say each fact once in a line; the
// uninstall's plan, whole manifests left out, fits on one screen before it
// says what it is about to do.
func TestTerminalSession(t *testing.T) {
	c := testcluster.Get(t)
	c.RequireOwnCluster(t) // kwok runs the web pods; the database pod stays unschedulable
	ns := c.Namespace(t)
	tool, err := toolbuild.Build(c.Root, t.TempDir(), "e2e", "test")
	if err != nil {
		t.Fatal(err)
	}
	c.Helm(t, "install", "demo", shimtest.Chart(c, "demo"), "-n", ns)
	session := func(args ...string) (*termtest.Terminal, <-chan int) {
		tm := termtest.Open(t, sessionCols, sessionRows)
		cmd := exec.Command(tool, append(args, "-n", ns)...)
		cmd.Env = append(c.Env(), "TERM=xterm-256color")
		tm.Start(t, cmd)
		done := make(chan int, 1)
		go func() {
			_ = cmd.Wait()
			done <- cmd.ProcessState.ExitCode()
		}()
		return tm, done
	}

	// The upgrade, acknowledged at the prompt, its watch interrupted.
	tm, done := session("demo", shimtest.Chart(c, "demo-v2"), "--watch-timeout", "30m")
	shows(t, tm, "Type the release name (demo)")
	tm.Type(t, "demo\r")
	shows(t, tm, "Watching the rollout")
	// The watch's own line (the plan names the StatefulSet too).
	shows(t, tm, "StatefulSet.apps/"+ns+"/demo-db: in-progress")
	tm.Type(t, "\x03")
	if code := exitOf(t, done); code != 1 {
		t.Errorf("upgrade interrupted: exit %d, want 1\n%s", code, shownOn(tm))
	}
	shows(t, tm, "Error: ")
	text := shownOn(tm)
	saysAll(t, "the interrupted upgrade", text, "Rollout: watch interrupted after ", "not checked: not current when the watch was interrupted",
		"Nothing failed because of the interruption: Helm's status of the revision stays deployed",
		"helm safe-upgrade status demo -n "+ns)
	if i := strings.Index(text, "Rollout: "); i >= 0 {
		saysOnce(t, "the interrupted upgrade's outcome", text[i:])
	}
	for _, wrong := range []string{"timed out", "rollout failed", "Rollout failed"} {
		if strings.Contains(text, wrong) {
			t.Errorf("the interrupted upgrade says %q:\n%s", wrong, text)
		}
	}
	var history []revision
	if err := json.Unmarshal([]byte(c.Helm(t, "history", "demo", "-n", ns, "-o", "json")), &history); err != nil || len(history) != 2 {
		t.Fatalf("helm history: %v, %+v", err, history)
	}
	if rev := history[1]; rev.Status != "deployed" {
		t.Errorf("revision 2 after the interrupted watch: %+v, want deployed", rev)
	}

	// status: the live health, and Helm's status not failed.
	tm, done = session("status", "demo")
	exitOf(t, done)
	shows(t, tm, "demo-db")
	text = shownOn(tm)
	saysAll(t, "status", text, "StatefulSet.apps/"+ns+"/demo-db not ready")
	if strings.Contains(text, "Helm status of revision") {
		t.Errorf("status reports Helm's status of a revision whose watch was only interrupted:\n%s", text)
	}
	saysOnce(t, "status", text+"\n"+run(t, c, "status", "demo", "-n", ns).Stdout)

	// log: the revision's record says the watch was interrupted.
	tm, done = session("log", "demo")
	if code := exitOf(t, done); code != 0 {
		t.Errorf("log: exit %d\n%s", code, shownOn(tm))
	}
	shows(t, tm, "revision 1")
	text = shownOn(tm)
	saysAll(t, "log", text, "watch interrupted after ")
	saysOnce(t, "log", text+"\n"+run(t, c, "log", "demo", "-n", ns).Stdout)

	// The uninstall: nothing destructive, so no prompt; its plan fits on
	// the screen above what it says it is about to do.
	tm, done = session("uninstall", "demo")
	if code := exitOf(t, done); code != 0 {
		t.Errorf("uninstall: exit %d\n%s", code, shownOn(tm))
	}
	shows(t, tm, `release "demo" uninstalled`)
	lines := shownLines(tm)
	text = strings.Join(lines, "\n")
	saysAll(t, "uninstall", text, "StatefulSet", "demo-db", "left in the cluster: PersistentVolumeClaim/"+ns+"/data-demo-db-0",
		"Manifests of the ", "-p/--diff shows them")
	about := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "Uninstalling demo through Helm: deleting ") {
			about = i
			break
		}
	}
	switch {
	case about < 0:
		t.Errorf("the uninstall does not say what it is about to do:\n%s", text)
	case about >= sessionRows:
		t.Errorf("the uninstall's plan takes %d rows, more than a screen of %d:\n%s", about+1, sessionRows, text)
	}
	t.Logf("the uninstall on the terminal:\n%s", text)
	if regexp.MustCompile(`(?m)^-(apiVersion|kind):`).MatchString(text) {
		t.Errorf("the uninstall prints whole manifests without -p:\n%s", text)
	}
}

// shows waits until the terminal shows want (screen or scrollback).
func shows(t *testing.T, tm *termtest.Terminal, want string) {
	t.Helper()
	testcluster.Eventually(t, "the terminal showing "+want, func() (bool, string) {
		text := shownOn(tm)
		return strings.Contains(text, want), text
	})
}

// shownLines are the terminal's rows, scrollback then screen, without the
// screen's empty rows at the end.
func shownLines(tm *termtest.Terminal) []string {
	screen, scrollback := tm.Lines()
	all := append(scrollback, screen...)
	for len(all) > 0 && all[len(all)-1] == "" {
		all = all[:len(all)-1]
	}
	return all
}

func shownOn(tm *termtest.Terminal) string { return strings.Join(shownLines(tm), "\n") }

// exitOf waits for a session's process to end and returns its exit code.
func exitOf(t *testing.T, done <-chan int) int {
	t.Helper()
	ctx, cancel := testcluster.CommandContext(t)
	defer cancel()
	select {
	case code := <-done:
		return code
	case <-ctx.Done():
		t.Fatal("the tool did not finish")
	}
	return -1
}
