package shim

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// ToolName is the file name of the full tool (helm-safe-upgrade) that serves
// the commands the dispatcher does not pass through.
const ToolName = "helm-safe-upgrade"

// DispatcherEnv carries the dispatcher's own file to the full tool it hands
// a command to: exec changes the process's executable, and the tool's
// lookup of the real helm must skip the dispatcher, not itself.
const DispatcherEnv = "SAFE_UPGRADE_SHIM"

// Dispatcher is the drop-in helm that `shim install` puts on PATH (the
// release archive's bin/helm, cmd/helm-shim): it links this package and the
// standard library only, so a passed-through command pays no Go package
// initialisation of Helm's SDK or client-go. It hands every command to the
// real helm, except those the full tool serves (Served), which it hands to
// ToolName beside its own file.
type Dispatcher struct {
	// Argv is the command line, argv[0] first.
	Argv []string
	// Self is this executable (os.Executable); PID the process id.
	Self string
	PID  int
	// PPID is the parent's process id (0: the process tree is not searched).
	PPID int
	// Getenv and Environ are the process's environment.
	Getenv  func(string) string
	Environ []string
	// Stderr receives the dispatcher's own errors.
	Stderr io.Writer
	// Exec replaces the process (Replace); it returns only when it failed.
	Exec func(path string, argv, env []string) error
}

// Served reports whether the full tool handles cmd: the commands that
// write through the gate (upgrade, rollback, uninstall), and the two whose
// answer depends on whether the tool serves helm diff.
func Served(cmd Command) bool {
	return Gated(cmd) || cmd == DiffUpgrade || cmd == PluginList
}

// Gated reports whether cmd writes to the cluster through the gate.
func Gated(cmd Command) bool {
	return cmd == Upgrade || cmd == Rollback || cmd == Uninstall
}

// Run hands the command over and returns the exit code (1) when it cannot.
// A panic is exit 1 too, as for the tool: Go's own code for it, 2, would
// read as "blocked by the gate".
func (d Dispatcher) Run() (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(d.Stderr, "Error: helm (safe-upgrade shim): %v (a bug)\n", r)
			code = 1
		}
	}()
	if len(d.Argv) == 0 {
		d.Argv = []string{Name} // a process may be started without argv[0]
	}
	err := d.run()
	if err == nil {
		return 0 // an Exec that returns (a test's) succeeded
	}
	fmt.Fprintf(d.Stderr, "Error: helm (safe-upgrade shim): %v\n", err)
	return 1
}

func (d Dispatcher) run() error {
	if Looped(d.Getenv(GuardEnv), d.PID) {
		return ErrLooped
	}
	cmd, _ := Classify(d.Argv[1:])
	if !Served(cmd) {
		tool, _ := ToolBeside(d.Self) // "" without one: passing through needs none
		helm, err := Lookup{Self: d.Self, Tool: tool, PPID: d.PPID, Explicit: d.Getenv(HelmEnv), Path: d.Getenv("PATH")}.RealHelm()
		if err != nil {
			return err
		}
		return execError(helm, d.Exec(helm, d.Argv, HelmEnviron(d.Environ, d.PID)))
	}
	tool, err := ToolBeside(d.Self)
	if err != nil {
		return err
	}
	env := append(withoutEnv(d.Environ, DispatcherEnv), DispatcherEnv+"="+d.Self)
	argv := append([]string(nil), d.Argv...)
	if !IsShim(argv[0]) {
		argv[0] = Name // the tool serves helm's commands only under that name
	}
	return execError(tool, d.Exec(tool, argv, env))
}

// ErrLooped is the error of a shim that finds it was started by itself
// (Looped).
var ErrLooped = fmt.Errorf("the helm this shim started is the shim again (a copy of it, or a script that runs it): %w", ErrNoRealHelm)

func execError(path string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("running %s: %w", path, err)
}

// ToolBeside returns the full tool for the dispatcher self: ToolName in the
// folder of self's file, symbolic links resolved (so a link DIR/helm made by
// `shim install` finds the tool beside the file it points to).
func ToolBeside(self string) (string, error) {
	resolved, err := filepath.EvalSymlinks(self)
	if err != nil {
		return "", fmt.Errorf("the shim's own executable %s: %w", self, err)
	}
	name := ToolName
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	tool := filepath.Join(filepath.Dir(resolved), name)
	fi, err := os.Stat(tool)
	if err == nil && fi.IsDir() {
		err = errors.New("a directory")
	}
	if err != nil {
		return "", fmt.Errorf("helm upgrade, rollback, uninstall and diff upgrade are served by %s, which must be beside the shim's file %s: %w; reinstall the shim with `helm safe-upgrade shim install DIR`", tool, resolved, err)
	}
	return tool, nil
}

// HelmEnviron is the environment the real helm gets: environ without
// DispatcherEnv (it concerns the tool only), with GuardEnv set to pid.
func HelmEnviron(environ []string, pid int) []string {
	return append(withoutEnv(environ, DispatcherEnv, GuardEnv), GuardEnv+"="+strconv.Itoa(pid))
}

// withoutEnv returns a copy of environ without the variables names.
func withoutEnv(environ []string, names ...string) []string {
	out := make([]string, 0, len(environ)+1)
next:
	for _, kv := range environ {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}
