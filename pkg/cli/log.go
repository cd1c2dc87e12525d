package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/report"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/verb"
)

// LogOptions are `log RELEASE`: the release's revisions as a commit log.
type LogOptions struct {
	readOnlyOptions
	Patch    bool
	MaxCount int

	// Set by Complete.
	Request verb.LogRequest
}

// logFormats are the formats of log and diff: those a reviewer reads.
func logFormats() []string { return report.SavedFormats() }

func isLogFormat(format string) bool { return slices.Contains(logFormats(), format) }

// logFormatList lists logFormats for help and error text.
func logFormatList() string { return strings.Join(logFormats(), ", ") }

// newLogCommand is `log RELEASE [-p] [--max-count N] [-o text|json|markdown]`.
func newLogCommand(f *Factory, runF runFunc) *cobra.Command {
	o := &LogOptions{readOnlyOptions: readOnlyOptions{Factory: f}}
	cmd := verbCommand(&cobra.Command{
		Use:   "log RELEASE",
		Short: "The release's revisions, newest first: who ran each, what it changed (classified), what was acknowledged, how the rollout went",
		Long: `One entry per revision, newest first, as git log reads: revision, date, chart
and app version, Helm's status, who ran it (user, the orchestrator that called
the drop-in helm, the CI commit and pipeline), the changes counted by verdict,
the acknowledgements with their fingerprints and where they came from (flag,
ack-file, prompt), what was recreated, --recover runs, and the rollout's
outcome against the plan's prediction. With -p, each object's verdict,
reasons and diff.

A revision the tool applied is read from the record it wrote beside Helm's;
one made by plain helm (or before the tool was used) is computed from the
manifests Helm stored for it and the revision before, offline, and marked
computed. Nothing is written.`,
		Args: releaseArg("log"),
	}, o, runF)
	o.addFlags(cmd.Flags(), "format: "+logFormatList(), render.DefaultTimeout, "time to wait for any individual Kubernetes operation")
	cmd.Flags().BoolVarP(&o.Patch, "patch", "p", false, "show each change's verdict, reasons and diff")
	// Not -n, git log's: -n is the namespace, as in every helm command.
	cmd.Flags().IntVar(&o.MaxCount, "max-count", 0, "show only the newest N revisions (0: all that Helm keeps)")
	return cmd
}

// Complete takes the release and makes the run's configuration.
func (o *LogOptions) Complete(args []string) error {
	o.Request = verb.LogRequest{ReleaseName: args[0], MaxCount: o.MaxCount}
	o.complete()
	return nil
}

// Validate checks the count, the format and the timeout.
func (o *LogOptions) Validate() error {
	if o.MaxCount < 0 {
		return fmt.Errorf("--max-count %d: want 0 (all) or more", o.MaxCount)
	}
	return o.validate(isLogFormat, logFormatList())
}

// Run reads the revisions and prints them.
func (o *LogOptions) Run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	entries, err := o.Config.Log(ctx, o.Request)
	if err != nil {
		return err
	}
	return report.WriteLog(o.Streams.Out, o.Request.ReleaseName, o.Config.Namespace, entries,
		report.LogOptions{Format: o.Output, Patch: o.Patch, Color: o.Streams.Color()})
}
