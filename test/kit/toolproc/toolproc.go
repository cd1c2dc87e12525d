// Package toolproc runs the tool in a subprocess of a test binary, so that
// a test can kill it (SIGKILL) or interrupt it (SIGTERM) as a user's run
// would be: the subprocess is the test binary itself, running one test
// that calls Child.
package toolproc

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/cli"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
)

// argsEnv passes the tool's command line to the subprocess.
const argsEnv = "SAFE_UPGRADE_E2E_TOOL_ARGS"

// Child is the body of the test Start runs in the subprocess: it runs the
// tool with the arguments Start gave, prints its exit code and stderr, and
// exits with its code. Run otherwise (as part of the package's tests), it
// skips.
func Child(t *testing.T) {
	args := os.Getenv(argsEnv)
	if args == "" {
		t.Skip("runs the tool in a subprocess for toolproc.Start")
	}
	var errOut bytes.Buffer
	code := cli.Execute("helm-safe-upgrade", strings.Split(args, "\x1f"), iostreams.Streams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &errOut},
		cli.BuildInfo{Version: "e2e", Commit: "test"})
	// No test verdict of its own: it would read as the parent's failure.
	fmt.Printf("safe-upgrade: exit %d\n%s", code, errOut.String())
	os.Exit(code)
}

// Process is the tool running in a subprocess.
type Process struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

// Start runs the tool with args in a subprocess: the test binary running
// only test (whose body calls Child). The process is killed when the test
// ends, if it still runs.
func Start(t *testing.T, test string, args ...string) *Process {
	t.Helper()
	p := &Process{cmd: exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v")}
	p.cmd.Env = append(os.Environ(), argsEnv+"="+strings.Join(args, "\x1f"))
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	return p
}

// Stop sends sig, waits for the process to end and returns what it
// printed, each line prefixed so that go test's output parser sees no test
// events in it.
func (p *Process) Stop(t *testing.T, sig os.Signal) string {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	out := "| " + strings.ReplaceAll(p.out.String(), "\n", "\n| ")
	t.Logf("the tool, sent %s, printed:\n%s", sig, out)
	return out
}
