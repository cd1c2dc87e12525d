package cli

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/report"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/verb"
)

// readOnlyOptions are what the verbs that only read the cluster (status,
// log, diff) share: Helm's global flags, -o, a --timeout that bounds the
// run, and the run's configuration. Each verb keeps its request, its own
// flags and its Run; show-plan reaches no cluster and takes none of this.
type readOnlyOptions struct {
	*Factory
	Output  string
	Timeout time.Duration

	// Set by complete.
	Config *verb.Config
}

// addFlags registers Helm's global flags, -o and --timeout with the verb's
// help and default.
func (o *readOnlyOptions) addFlags(fs *pflag.FlagSet, outputHelp string, timeout time.Duration, timeoutHelp string) {
	o.Factory.AddFlags(fs)
	fs.StringVarP(&o.Output, "output", "o", report.FormatText, outputHelp)
	fs.DurationVar(&o.Timeout, "timeout", timeout, timeoutHelp)
}

// complete makes the run's configuration, every request bounded by
// --timeout.
func (o *readOnlyOptions) complete() { o.Config = o.RunConfig(o.Timeout) }

// validate checks -o against the verb's formats (isFormat; list names them
// in the error) and that --timeout leaves the run any time at all.
func (o *readOnlyOptions) validate(isFormat func(string) bool, list string) error {
	switch {
	case !isFormat(o.Output):
		return fmt.Errorf("--output %q: want %s", o.Output, list)
	case o.Timeout <= 0:
		return fmt.Errorf("--timeout %s: must be positive", o.Timeout)
	}
	return nil
}
