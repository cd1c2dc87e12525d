package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	helmcli "helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/panics"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/verb"
)

// Factory is what every command of the tree shares, as kubectl's and the
// GitHub CLI's factories are: the streams, Helm's settings (its global
// flags: namespace, kube context, kubeconfig, --debug, …, with the HELM_*
// environment as defaults), what marks and masks the run's requests, and
// the run's one configuration (Helm's and the cluster connection), made on
// first use. A verb takes what it needs in its Complete; exit codes come
// from the factory's exit (exit.go).
type Factory struct {
	Streams  iostreams.Streams
	Settings *helmcli.EnvSettings
	// Masker masks Secret values (nil: a fresh random key); UserAgent marks
	// every request of this tool (audit logs show it).
	Masker    *redact.Masker
	UserAgent string
	// Command is the command line without flag values (see commandLine):
	// what a writing verb's Lease shows other users.
	Command string
	// Program is how the user runs the tool ("helm safe-upgrade",
	// "kubectl safe-upgrade"): the commands a message suggests start so.
	Program string
	// Caller and Announce are the helm shim's (see verb.Config).
	Caller   string
	Announce func(rel *release.Release, installed bool) error
	// HelmOut, when set, receives the lines Helm itself prints after a
	// verb without an Announce (uninstall's "release ... uninstalled"):
	// the helm shim's stdout, which scripts parse.
	HelmOut io.Writer

	config *verb.Config
}

// NewFactory returns a factory with Helm's environment (HELM_NAMESPACE,
// HELM_KUBECONTEXT, HELM_DRIVER, ...) as defaults, as a Helm plugin
// receives it.
func NewFactory(streams iostreams.Streams) *Factory {
	return &Factory{Streams: streams, Settings: helmcli.New()}
}

// AddFlags registers Helm's global flags, which every verb that reaches
// the cluster takes.
func (f *Factory) AddFlags(fs *pflag.FlagSet) { f.Settings.AddFlags(fs) }

// RunConfig returns the run's configuration, every request bounded by
// timeout; a run makes one, and its Sanitizer masks the errors exit prints.
func (f *Factory) RunConfig(timeout time.Duration) *verb.Config {
	if f.config != nil {
		return f.config
	}
	c := verb.NewConfig(f.Settings, f.Streams.ErrOut, f.UserAgent, f.Masker)
	c.Command, c.Program = f.Command, f.Program
	c.RequestTimeout = timeout
	c.Terminal, c.TerminalSize = f.Streams.CanRedraw(), f.Streams.ErrSize
	c.Caller, c.Announce = f.Caller, f.Announce
	if f.Streams.ErrTTY {
		c.Progress = func(format string, args ...interface{}) {
			fmt.Fprintf(f.Streams.ErrOut, format+"…\n", args...)
		}
	}
	f.config = c
	return c
}

// prompter is p, the prompt a test set, or else the one that asks on the
// terminal for the acknowledgements (or the release name) missing.
func (f *Factory) prompter(p gate.Prompter) gate.Prompter {
	if p != nil {
		return p
	}
	return gate.NewLinePrompter(f.Streams.In, f.Streams.ErrOut)
}

// execute runs cmd with args and returns the exit code. Any panic ends in
// exit 1 with a one-line error (the stack only with --debug or
// HELM_DEBUG): exit 2 means "blocked by the gate" and nothing else.
func (f *Factory) execute(argv0 string, cmd *cobra.Command, args []string, build BuildInfo) (code int) {
	defer func() {
		if r := recover(); r != nil {
			code = f.exit(panics.New(r))
		}
	}()
	// --version is also helm upgrade's chart-version flag (--version 1.2.3);
	// alone, it asks for the tool's version.
	if len(args) == 1 && args[0] == "--version" {
		fmt.Fprint(f.Streams.Out, versionLine(argv0, build))
		return ExitOK
	}
	cmd.SetArgs(args)
	cmd.SetIn(f.Streams.In)
	cmd.SetOut(f.Streams.Out)
	cmd.SetErr(f.Streams.ErrOut)
	// Flag errors are bad input: exit 1 with the message, as for any error.
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	// Ctrl-C cancels the run; before a write starts nothing is written.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return f.exit(cmd.ExecuteContext(ctx))
}
