package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	helmcli "helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/shim"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/shim/helmdiff"
)

// Environment of the helm shim's gate.
const (
	// AckFileEnv names the ack file the shim reads; without it,
	// DefaultAckFile in the working directory, when there is one.
	AckFileEnv     = "SAFE_UPGRADE_ACK_FILE"
	DefaultAckFile = ".safe-upgrade-acks.yaml"
	// ForceEnv=ForceKeep passes helm upgrade's --force (--force-replace)
	// on to Helm; unset, the shim leaves it out (see ShimOptions.force).
	ForceEnv  = "SAFE_UPGRADE_FORCE"
	ForceKeep = "keep"
)

// ackRule is the one rule for where the shim's acknowledgements come from,
// shown when a gated command is blocked.
const ackRule = "acknowledgements come from the file " + AckFileEnv + " names, else " + DefaultAckFile + " in the working directory"

// ShimOptions is the drop-in helm: the binary invoked as helm. It serves
// `helm upgrade`, `helm rollback` and `helm uninstall` through the gate
// (plan → gate → apply as helm safe-upgrade's upgrade, rollback and
// uninstall, Helm's lines on stdout, the report on stderr), `helm diff
// upgrade` as a plan when no helm-diff plugin is installed (or
// SAFE_UPGRADE_DIFF=1), adds a diff row to `helm plugin list` then, and
// hands every other command to the real helm unchanged. It parses no flag
// itself beyond what it must recognise; the gate's own command parses the
// rest.
type ShimOptions struct {
	Streams iostreams.Streams
	Build   BuildInfo
	// Argv0 and Args are the command line as the shim received it.
	Argv0 string
	Args  []string
	// Getenv, Environ, Self (the dispatcher's file, else os.Executable),
	// Tool (os.Executable), Dir (the working directory), PID and PPID are
	// the process's; tests set them.
	Getenv  func(string) string
	Environ []string
	Self    string
	Tool    string
	Dir     string
	PID     int
	PPID    int
	// Exec replaces the process with the real helm (syscall.Exec: same
	// process id, streams, environment and exit code); tests replace it.
	Exec func(path string, argv, env []string) error
	// Masker masks Secret values of a served upgrade (nil: a fresh key).
	Masker *redact.Masker

	// Set by Complete.
	Command  shim.Command
	cmdIndex int
	// ServeDiff: the shim answers helm diff upgrade.
	ServeDiff bool
	// AckFile is the ack file the rule found ("" for none).
	AckFile string
}

// NewShimOptions returns the options of this process.
func NewShimOptions(streams iostreams.Streams, build BuildInfo, argv0 string, args []string) *ShimOptions {
	// Handed over by the dispatcher (cmd/helm-shim), the shim's file is the
	// dispatcher's, which the lookup of the real helm must skip.
	tool, _ := os.Executable()
	self := os.Getenv(shim.DispatcherEnv)
	if self == "" {
		self = tool
	}
	dir, _ := os.Getwd()
	return &ShimOptions{Streams: streams, Build: build, Argv0: argv0, Args: args,
		Getenv: os.Getenv, Environ: os.Environ(), Self: self, Tool: tool, Dir: dir,
		PID: os.Getpid(), PPID: os.Getppid(), Exec: syscall.Exec}
}

// ExecuteShim runs the drop-in helm and returns the process exit code.
func ExecuteShim(o *ShimOptions) int {
	if err := o.Complete(); err != nil {
		return exitCode(err, o.Streams.ErrOut, false)
	}
	if err := o.Validate(); err != nil {
		return exitCode(err, o.Streams.ErrOut, false)
	}
	return o.Run()
}

// Complete tells the command apart and where its answers come from.
func (o *ShimOptions) Complete() error {
	o.Command, o.cmdIndex = shim.Classify(o.Args)
	if o.Command == shim.DiffUpgrade || o.Command == shim.PluginList {
		serve, err := helmdiff.Serves(o.Getenv(helmdiff.Env), o.pluginDirs())
		if err != nil {
			return err
		}
		o.ServeDiff = serve
	}
	if shim.Gated(o.Command) || (o.Command == shim.DiffUpgrade && o.ServeDiff) {
		file, err := o.ackFile()
		if err != nil {
			return err
		}
		o.AckFile = file
	}
	return nil
}

// Validate refuses to run when the shim was started by itself (see
// shim.GuardEnv).
func (o *ShimOptions) Validate() error {
	if shim.Looped(o.Getenv(shim.GuardEnv), o.PID) {
		return shim.ErrLooped
	}
	return nil
}

// Run serves the command or hands it to the real helm; it returns the exit code.
func (o *ShimOptions) Run() int {
	switch {
	case o.Command == shim.Upgrade:
		return o.upgrade()
	case o.Command == shim.Rollback:
		return o.verb("rollback", newRollbackCommand)
	case o.Command == shim.Uninstall:
		return o.verb("uninstall", newUninstallCommand)
	case o.Command == shim.DiffUpgrade && o.ServeDiff:
		return o.diff()
	case o.Command == shim.PluginList && o.ServeDiff:
		return o.pluginList()
	}
	return o.passThrough()
}

// pluginDirs is Helm's plugin folder list: HELM_PLUGINS, else Helm's default.
func (o *ShimOptions) pluginDirs() string {
	if dirs := o.Getenv("HELM_PLUGINS"); dirs != "" {
		return dirs
	}
	return helmcli.New().PluginsDirectory
}

// ackFile applies the ack-file rule: the file AckFileEnv names (it must
// exist), else DefaultAckFile in the working directory when it exists.
func (o *ShimOptions) ackFile() (string, error) {
	if path := o.Getenv(AckFileEnv); path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("%s=%s: %w", AckFileEnv, path, err)
		}
		return path, nil
	}
	path := filepath.Join(o.Dir, DefaultAckFile)
	if _, err := os.Stat(path); err != nil {
		return "", nil
	}
	return path, nil
}

// realHelm finds the real helm (shim.Lookup).
func (o *ShimOptions) realHelm() (string, error) {
	return shim.Lookup{Self: o.Self, Tool: o.Tool, PPID: o.PPID, Explicit: o.Getenv(shim.HelmEnv), Path: o.Getenv("PATH")}.RealHelm()
}

// passThrough replaces the process with the real helm, the same arguments
// and environment (plus shim.GuardEnv); where the system cannot replace a
// process (Windows) it runs helm as a child with the same streams and
// returns its exit code.
func (o *ShimOptions) passThrough() int {
	helm, err := o.realHelm()
	if err != nil {
		return exitCode(err, o.Streams.ErrOut, false)
	}
	argv := append([]string{o.Argv0}, o.Args...)
	env := shim.HelmEnviron(o.Environ, o.PID)
	if runtime.GOOS == "windows" {
		return o.runHelm(helm, env, o.Streams.Out)
	}
	err = o.Exec(helm, argv, env) // returns only when it failed
	return exitCode(fmt.Errorf("running %s: %w", helm, err), o.Streams.ErrOut, false)
}

// runHelm runs the real helm as a child with the shim's arguments, stdin and
// stderr, its stdout to out, and returns its exit code.
func (o *ShimOptions) runHelm(helm string, env []string, out io.Writer) int {
	cmd := exec.Command(helm, o.Args...)
	cmd.Args[0] = o.Argv0
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.Streams.In, out, o.Streams.ErrOut
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		if code := exitErr.ExitCode(); code > 0 {
			return code
		}
		return ExitError // killed by a signal
	case err != nil:
		return exitCode(fmt.Errorf("running %s: %w", helm, err), o.Streams.ErrOut, false)
	}
	return ExitOK
}

// pluginList runs the real helm's plugin list and adds the diff row the
// shim answers for (helmdiff.PluginListLine) after Helm's own rows: Helmsman
// refuses to start unless it finds "diff" there.
func (o *ShimOptions) pluginList() int {
	helm, err := o.realHelm()
	if err != nil {
		return exitCode(err, o.Streams.ErrOut, false)
	}
	env := shim.HelmEnviron(o.Environ, o.PID)
	code := o.runHelm(helm, env, o.Streams.Out)
	if code == ExitOK {
		fmt.Fprint(o.Streams.Out, helmdiff.PluginListLine(o.Build.Version))
	}
	return code
}

// upgrade serves helm upgrade: the gate's plan, report (on stderr: stdout is
// Helm's), gate and apply, then Helm's own lines on stdout.
func (o *ShimOptions) upgrade() int {
	inv, streams, err := o.gated("upgrade")
	if err != nil {
		return exitCode(err, o.Streams.ErrOut, false)
	}
	u := o.gateOptions(streams)
	u.Announce = func(rel *release.Release, installed bool) error {
		return writeHelmStatus(o.Streams.Out, rel, installed, u.Render.HideNotes)
	}
	code := u.execute("helm-safe-upgrade", o.withAckFile(inv), o.Build)
	return o.blocked("upgrade", inv, code)
}

// gated returns the tool's arguments for the gated command line helm VERB
// (shim.GateArgs, --force decided by force) and the streams of the gate's
// run: its report on stderr, as stdout is Helm's.
func (o *ShimOptions) gated(verb string) (shim.Invocation, iostreams.Streams, error) {
	inv, err := shim.GateArgs(o.Args, o.cmdIndex, "helm "+verb)
	if err != nil {
		return inv, iostreams.Streams{}, err
	}
	if inv.Args, err = o.force(inv); err != nil {
		return inv, iostreams.Streams{}, err
	}
	streams := o.Streams
	streams.Out, streams.OutTTY = o.Streams.ErrOut, o.Streams.ErrTTY
	streams.NoColor = streams.NoColor || inv.NoColor
	return inv, streams, nil
}

// blocked returns the exit code of helm VERB served through the gate:
// after a blocked command, where acknowledgements come from; a blocked
// --dry-run exits 0, as Helm's does.
func (o *ShimOptions) blocked(verb string, inv shim.Invocation, code int) int {
	if code != ExitBlocked {
		return code
	}
	o.explainAcks()
	if inv.DryRun {
		// helm VERB --dry-run succeeds whatever the command would do, and
		// scripts run it as a check that must pass: the report above says
		// what the real command would be blocked on.
		fmt.Fprintf(o.Streams.ErrOut, "helm (safe-upgrade shim): --dry-run: nothing was written; exit 0 as helm %[1]s --dry-run, though the %[1]s itself would be blocked as above\n", verb)
		return ExitOK
	}
	return code
}

// verb serves helm rollback or helm uninstall (name) as helm safe-upgrade's
// command of that name (newCmd): plan, report on stderr, gate, apply, then Helm's
// own line on stdout ("Rollback was a success! Happy Helming!", "release
// ... uninstalled"). Blocked, it writes nothing and exits 2.
func (o *ShimOptions) verb(name string, newCmd func(*Factory, runFunc) *cobra.Command) int {
	inv, streams, err := o.gated(name)
	if err != nil {
		return exitCode(err, o.Streams.ErrOut, false)
	}
	f := NewFactory(streams)
	f.Masker, f.Caller, f.HelmOut = o.Masker, shim.Caller(o.PPID), o.Streams.Out
	rolledBack := false
	if name == "rollback" {
		// As for upgrade, the shim ends where helm rollback does, with its
		// line (cmd/helm/rollback.go of Helm 3 and 4).
		f.Announce = func(*release.Release, bool) error {
			rolledBack = true
			return nil
		}
	}
	code := f.executeVerb("helm-safe-upgrade", newCmd, o.withAckFile(inv), o.Build)
	if name == "rollback" && code == ExitOK && (rolledBack || inv.DryRun) {
		fmt.Fprintln(o.Streams.Out, "Rollback was a success! Happy Helming!")
	}
	return o.blocked(name, inv, code)
}

// force returns inv's arguments with or without its --force
// (--force-replace). An orchestrator forces an upgrade to push an immutable
// change through (Helmsman's --force-upgrades); Helm's --force does not
// recreate anything, it PUTs every object, and fails on one whose PUT lacks
// what the server filled in (a Job's generated selector). Through the
// shim, the gate's acknowledged safe recreate is the way to change an
// immutable field: the flag is left out, with a line on stderr saying so,
// unless ForceEnv is ForceKeep (then it is passed on, and planned as Helm's
// PUT of every object). Any other value of ForceEnv is an error.
func (o *ShimOptions) force(inv shim.Invocation) ([]string, error) {
	keep := o.Getenv(ForceEnv)
	switch {
	case keep != "" && keep != ForceKeep:
		return nil, fmt.Errorf("%s=%s: want %s (pass helm upgrade's --force on to Helm) or nothing", ForceEnv, keep, ForceKeep)
	case keep == ForceKeep:
		return append(inv.Args, inv.Force...), nil
	case inv.Forced:
		fmt.Fprintf(o.Streams.ErrOut, "helm (safe-upgrade shim): %s not passed to Helm, which would replace every object with PUT; an immutable change goes through the gate's acknowledged safe recreate instead (%s=%s passes it on)\n",
			strings.Join(inv.Force, " "), ForceEnv, ForceKeep)
	}
	return inv.Args, nil
}

// gateOptions returns the options of the gate's run for the shim, the
// caller named for the release description.
func (o *ShimOptions) gateOptions(streams iostreams.Streams) *UpgradeOptions {
	u := NewUpgradeOptions(streams)
	u.Masker = o.Masker
	u.Caller = shim.Caller(o.PPID)
	return u
}

// withAckFile returns inv's arguments with the ack file of the rule, unless
// the command line names one itself.
func (o *ShimOptions) withAckFile(inv shim.Invocation) []string {
	if o.AckFile == "" || inv.AckFileGiven {
		return inv.Args
	}
	return append(inv.Args, "--ack-file="+o.AckFile)
}

// explainAcks says, after a blocked command, where acknowledgements come from.
func (o *ShimOptions) explainAcks() {
	found := "none found"
	if o.AckFile != "" {
		found = "read " + o.AckFile
	}
	fmt.Fprintf(o.Streams.ErrOut, "helm (safe-upgrade shim): %s (%s); an entry is {kind, namespace, name, fingerprint, reason}, see docs/orchestrators.md\n", ackRule, found)
}

// knownFlag returns a shim.FlagInfo over the gate command's flags.
func knownFlag() shim.FlagInfo {
	fs := pflag.NewFlagSet("safe-upgrade", pflag.ContinueOnError)
	NewUpgradeOptions(iostreams.Streams{}).addFlagsTo(fs)
	return func(name string) (bool, bool) {
		f := fs.Lookup(name)
		if len(name) == 1 {
			f = fs.ShorthandLookup(name)
		}
		if f == nil {
			return false, false
		}
		return true, f.NoOptDefVal == ""
	}
}

// writeHelmStatus prints what helm upgrade prints after a successful upgrade
// or install (Helm 3's status table: cmd/helm/upgrade.go and status.go of
// helm v3.22), which scripts parse: the "has been upgraded" or "Installing
// it now" line, name, last deployed, namespace, status, revision, test
// suite and the chart's NOTES.
func writeHelmStatus(w io.Writer, rel *release.Release, installed, hideNotes bool) error {
	if installed {
		fmt.Fprintf(w, "Release %q does not exist. Installing it now.\n", rel.Name)
	} else {
		fmt.Fprintf(w, "Release %q has been upgraded. Happy Helming!\n", rel.Name)
	}
	fmt.Fprintf(w, "NAME: %s\n", rel.Name)
	if !rel.Info.LastDeployed.IsZero() {
		fmt.Fprintf(w, "LAST DEPLOYED: %s\n", rel.Info.LastDeployed.Format(time.ANSIC))
	}
	fmt.Fprintf(w, "NAMESPACE: %s\n", rel.Namespace)
	fmt.Fprintf(w, "STATUS: %s\n", rel.Info.Status.String())
	fmt.Fprintf(w, "REVISION: %d\n", rel.Version)
	// Helm prints the test suite only when the release has test hooks that
	// ran, which a fresh upgrade's have not.
	if !hasTestHooks(rel) {
		fmt.Fprintln(w, "TEST SUITE: None")
	}
	if !hideNotes && len(rel.Info.Notes) > 0 {
		fmt.Fprintf(w, "NOTES:\n%s\n", strings.TrimSpace(rel.Info.Notes))
	}
	return nil
}

func hasTestHooks(rel *release.Release) bool {
	for _, h := range rel.Hooks {
		for _, e := range h.Events {
			if e == release.HookTest {
				return true
			}
		}
	}
	return false
}
