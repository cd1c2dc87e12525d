package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/verb"
)

// RecoverOptions are `recover RELEASE` (and the upgrade's --recover, its
// spelling before verbs): settle what an interrupted apply of RELEASE left.
type RecoverOptions struct {
	*Factory
	// Timeout bounds each request (--timeout); Yes restores without asking.
	Timeout time.Duration
	Yes     bool

	// Set by Complete.
	Release  string
	Config   *verb.Config
	Prompter gate.Prompter
}

// newRecoverCommand is `recover RELEASE`.
func newRecoverCommand(f *Factory, runF runFunc) *cobra.Command {
	o := &RecoverOptions{Factory: f}
	cmd := recordedCommand(&cobra.Command{
		Use:   "recover RELEASE",
		Short: "After an interrupted apply: restore what it deleted for recreation, settle its pending revision",
		Long: `After an apply that was interrupted (killed mid-way): restore the objects it
deleted for recreation from its journal (each entry checked against the
deployed revision first), mark the revision it left pending as failed, and
remove the journal. What it will do is printed first; on a terminal it asks
for the release name, elsewhere it needs --yes. It holds the release's Lease
meanwhile. The same as RELEASE --recover.`,
		Args: releaseArg("recover"),
	}, f, "recover", o, runF)
	f.AddFlags(cmd.Flags())
	cmd.Flags().DurationVar(&o.Timeout, "timeout", render.DefaultTimeout, "time to wait for any individual Kubernetes operation")
	cmd.Flags().BoolVar(&o.Yes, "yes", false, "restore without asking (CI); what it re-creates is still printed first")
	return cmd
}

// Complete takes the release and makes the run's configuration.
func (o *RecoverOptions) Complete(args []string) error {
	o.Release = args[0]
	opts := o.render()
	o.Config = o.RunConfig(opts.TimeLimit())
	o.Prompter = o.prompter(o.Prompter)
	return nil
}

// Validate has nothing to check: Args checked the release name.
func (o *RecoverOptions) Validate() error { return nil }

// Run restores what the journal holds, once confirmed.
func (o *RecoverOptions) Run(ctx context.Context) error {
	var confirm func(string) (bool, error)
	if !o.Yes {
		confirm = o.confirm
	}
	return o.Config.Recover(ctx, o.Release, o.render(), confirm)
}

// render is the one render option a recovery reads: its time limit.
func (o *RecoverOptions) render() render.Options { return render.Options{Timeout: o.Timeout} }

// confirm asks, on a terminal, to type the release name before restoring
// what was printed; without one it refuses (--yes is how CI confirms).
func (o *RecoverOptions) confirm(string) (bool, error) {
	if !o.Streams.CanPrompt() {
		return false, fmt.Errorf("release %q: --recover re-creates the objects listed above: confirm on a terminal, or pass --yes; nothing was restored or changed", o.Release)
	}
	return gate.ConfirmRelease(o.Prompter, o.Release, "restore them")
}
