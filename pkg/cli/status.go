package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/report"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/verb"
)

// StatusOptions are `status RELEASE [RELEASE…]`: what is deployed, against
// what Helm says it deployed (see verb.Status).
type StatusOptions struct {
	readOnlyOptions
	AllNamespaces    bool
	DetailedExitcode bool

	// Set by Complete.
	Request verb.StatusRequest
}

// newStatusCommand is `status RELEASE [RELEASE…]`.
func newStatusCommand(f *Factory, runF runFunc) *cobra.Command {
	o := &StatusOptions{readOnlyOptions: readOnlyOptions{Factory: f}}
	cmd := recordedCommand(&cobra.Command{
		Use:   "status RELEASE [RELEASE...]",
		Short: "Show what is deployed: each release's live objects against its stored manifest, drift classified, and the release's health",
		Long: `Compare the live objects of each RELEASE (-A: of every release of every
namespace, or of the RELEASEs named, in any namespace) with the manifest
Helm stored for it, without rendering anything. Each object is in sync,
drifted (each field path, stored → live value, and the field manager and
time that wrote it, from managedFields), missing, or extra (it carries the
release's ownership annotations or labels but is not in the manifest).
Fields the chart does not set (status, replicas an autoscaler owns,
defaulted fields) are not drift.

What the drift means is said as the next upgrade of the same chart and
values would do it, with the plan's verdicts: a drifted field is reverted
in place, by a rolling update, or needs a recreate when it is immutable; a
missing object is re-created. The release's health is shown with it: its
Helm status, an unfinished recreate journal, a held Lease.

Every kind is listed once for all the releases asked. Nothing is written
(the verdicts come from the planner's dry-runs, as a plan's).

Exit codes:
  0  success (with --detailed-exitcode: every object in sync)
  1  error
  3  with --detailed-exitcode: an object drifted or is missing`,
		Args: statusArgs,
	}, f, "status", o, runF)
	fs := cmd.Flags()
	o.addFlags(fs, "report format: "+report.FormatList(), 5*time.Minute, "time the whole status may take")
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "every release of every namespace, or the RELEASEs named in any namespace")
	fs.BoolVar(&o.DetailedExitcode, "detailed-exitcode", false, "exit 3 when an object drifted or is missing, 0 when every object is in sync")
	return cmd
}

// statusArgs accepts Helm release names: `status ./chart` stays the
// upgrade of the release "status" (see route).
func statusArgs(cmd *cobra.Command, args []string) error {
	if all, _ := cmd.Flags().GetBool("all-namespaces"); len(args) == 0 && !all {
		return errors.New("status expects RELEASE [RELEASE...], or -A for every release; see --help")
	}
	for _, a := range args {
		if err := chartutil.ValidateReleaseName(a); err != nil {
			return fmt.Errorf("status %q: %w", a, err)
		}
	}
	return nil
}

// Complete builds the request and the run's configuration.
func (o *StatusOptions) Complete(args []string) error {
	o.Request = verb.StatusRequest{Releases: args, AllNamespaces: o.AllNamespaces, Timeout: o.Timeout}
	o.complete()
	return nil
}

// Validate checks the flags' values.
func (o *StatusOptions) Validate() error {
	return o.validate(report.IsFormat, report.FormatList())
}

// Run reads the status and writes it; with --detailed-exitcode, exit 3 when
// anything drifted or is missing.
func (o *StatusOptions) Run(ctx context.Context) error {
	st, err := o.Config.Status(ctx, o.Request)
	if err != nil {
		return err
	}
	if err := report.WriteStatus(o.Streams.Out, st, o.Output); err != nil {
		return err
	}
	if o.Output != report.FormatText {
		fmt.Fprintln(o.Streams.ErrOut, report.StatusLine(st))
	}
	if o.DetailedExitcode && st.OutOfSync() {
		return withExitCode(ExitPending, nil)
	}
	return nil
}
