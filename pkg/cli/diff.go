package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/report"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/verb"
)

// DiffOptions are `diff RELEASE REV1 REV2`: what going from one stored
// revision to another changes, classified.
type DiffOptions struct {
	readOnlyOptions
	DiffContext int

	// Set by Complete.
	Request verb.DiffRequest
}

// newDiffCommand is `diff RELEASE REV1 REV2 [-o text|json|markdown]`.
func newDiffCommand(f *Factory, runF runFunc) *cobra.Command {
	o := &DiffOptions{readOnlyOptions: readOnlyOptions{Factory: f}}
	cmd := verbCommand(&cobra.Command{
		Use:   "diff RELEASE REV1 REV2",
		Short: "What going from revision REV1 to REV2 of the release changes, classified (helm-diff's diff revision, with verdicts)",
		Long: `Classify what changes from the manifest Helm stored for revision REV1 to
revision REV2's, with the offline verdicts of the plan (the catalogue of
immutable fields; no live state): each object created, deleted, changed in
place, rolled or recreate-required, with its reasons and diff, Secrets
masked. Nothing is written.`,
		Args: diffArgs,
	}, o, runF)
	o.addFlags(cmd.Flags(), "report format: "+logFormatList(), render.DefaultTimeout, "time to wait for any individual Kubernetes operation")
	cmd.Flags().IntVar(&o.DiffContext, "diff-context", report.DefaultContext, "lines of context in diffs")
	return cmd
}

// diffArgs takes RELEASE REV1 REV2. One argument alone is taken when it is
// a release name, as every verb that takes RELEASE (see route): "diff
// ./chart" stays the upgrade of the release "diff", "diff app" asks for
// the revisions.
func diffArgs(_ *cobra.Command, args []string) error {
	if err := releaseArg("diff")(nil, args[:min(1, len(args))]); err != nil {
		return err
	}
	switch len(args) {
	case 1:
		return nil
	case 3:
		for _, a := range args[1:] {
			if _, err := revisionArg(a); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("diff expects RELEASE REV1 REV2, got %d argument(s); see --help", len(args))
}

// revisionArg is a revision number: 1 or more.
func revisionArg(a string) (int, error) {
	return revisionNumber(a, 1, "diff: revision %q: want a revision number (1 or more)")
}

// Complete takes the release and revisions and makes the run's
// configuration.
func (o *DiffOptions) Complete(args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("diff %s: expects RELEASE REV1 REV2; see --help", args[0])
	}
	from, _ := revisionArg(args[1])
	to, _ := revisionArg(args[2])
	o.Request = verb.DiffRequest{ReleaseName: args[0], From: from, To: to}
	o.complete()
	return nil
}

// Validate checks the diff context, the format and the timeout.
func (o *DiffOptions) Validate() error {
	if o.DiffContext < 0 {
		return fmt.Errorf("--diff-context %d: want 0 or more", o.DiffContext)
	}
	return o.validate(isLogFormat, logFormatList())
}

// Run classifies the two revisions' difference and prints it.
func (o *DiffOptions) Run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	p, err := o.Config.DiffRevisions(ctx, o.Request)
	if err != nil {
		return err
	}
	// Asked for a diff: the objects one revision has and the other has not
	// are shown whole too.
	req := report.Request{Output: o.Output, DiffContext: o.DiffContext, WholeObjects: true}
	return req.Write(o.Streams.Out, o.Streams.ErrOut, p, o.Streams.Color(), "", false)
}
