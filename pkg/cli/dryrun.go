package cli

import (
	"fmt"
	"strconv"
)

// dryRunFlag is --dry-run with helm upgrade's spellings: alone it means
// "client" (Helm's NoOptDefVal); "client", "server" and "true" plan without
// writing; "false", "none" and "" apply. Both dry-run modes plan the same
// way here: the planner always asks the server with dryRun=All (Helm's
// "server"), which is what a plan needs to see immutable-field refusals.
type dryRunFlag struct {
	on   *bool
	mode string
}

func (f *dryRunFlag) String() string {
	if f.mode == "" {
		return strconv.FormatBool(*f.on)
	}
	return f.mode
}

func (f *dryRunFlag) Set(v string) error {
	switch v {
	case "client", "server", "true":
		*f.on = true
	case "false", "none", "":
		*f.on = false
	default:
		return fmt.Errorf("invalid dry-run value %q: want one of false, true, none, client, server (as helm upgrade)", v)
	}
	f.mode = v
	return nil
}

func (f *dryRunFlag) Type() string { return "string" }
