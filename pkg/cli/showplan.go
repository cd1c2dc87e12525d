package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/report"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/savedplan"
)

// ShowPlanOptions are show-plan's: print the report a saved plan was
// reviewed with, as the plan job printed it, without reaching the cluster.
type ShowPlanOptions struct {
	Streams     iostreams.Streams
	Output      string
	Unencrypted bool

	// Set by Complete.
	Path string
	Keys savedplan.Keys
}

// newShowPlanCommand is `show-plan FILE [-o text|json|markdown]`.
func newShowPlanCommand(f *Factory, runF runFunc) *cobra.Command {
	o := &ShowPlanOptions{Streams: f.Streams}
	cmd := verbCommand(&cobra.Command{
		Use:   "show-plan FILE",
		Short: "Print the report a saved plan (--plan-out) was reviewed with, without contacting the cluster",
		Long: `Print the report a saved plan was reviewed with: the plan job's report, masked,
byte for byte as it printed it (without colour). The plan is decrypted with
` + savedplan.EnvIdentity + ` (an identity file or the key) or ` + savedplan.EnvPassphrase + `,
and refused, exit 1, when it was edited, truncated or is not for that key.
Who made it (tool, time, cluster, CI commit and pipeline) goes to stderr.`,
		Args: exactArgs(1, "show-plan expects FILE, got %d argument(s)"),
	}, o, runF)
	cmd.Flags().StringVarP(&o.Output, "output", "o", report.FormatText, "report format: "+strings.Join(report.SavedFormats(), ", "))
	cmd.Flags().BoolVar(&o.Unencrypted, "plan-unencrypted", false, "accept a plan saved in clear (--plan-out --plan-unencrypted)")
	return cmd
}

// Complete takes the file and the keys from the environment.
func (o *ShowPlanOptions) Complete(args []string) error {
	o.Path = args[0]
	o.Keys = savedplan.KeysFromEnv(os.Getenv, nil, o.Unencrypted)
	o.Keys.Warnings = o.Streams.ErrOut
	return nil
}

// Validate checks the format.
func (o *ShowPlanOptions) Validate() error {
	if !slices.Contains(report.SavedFormats(), o.Output) {
		return fmt.Errorf("--output %q: a saved plan keeps its report as %s", o.Output, strings.Join(report.SavedFormats(), ", "))
	}
	return nil
}

// Run opens the plan (decrypted and checked) and prints its report; it
// never reaches the cluster.
func (o *ShowPlanOptions) Run(context.Context) error {
	s, err := savedplan.Open(o.Path, o.Keys)
	if err != nil {
		return fmt.Errorf("show-plan %w", err)
	}
	text, ok := s.Reports[o.Output]
	if !ok {
		return errors.New("show-plan " + o.Path + ": the saved plan holds no " + o.Output + " report")
	}
	fmt.Fprintln(o.Streams.ErrOut, s.Origin())
	_, err = fmt.Fprint(o.Streams.Out, text)
	return err
}
