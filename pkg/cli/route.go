package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// route returns args rewritten so that cobra finds the command the line
// means by the reading rule (longHelp): that command's name first, or
// "upgrade" first for an upgrade, so that no release name is ever read as
// a command. A line without arguments stays with the root (its help, or
// its "expected RELEASE and CHART").
func route(root *cobra.Command, args []string) []string {
	pos, dash := positionals(flagArity(root), args)
	if len(pos) == 0 {
		return args
	}
	first := args[pos[0]]
	verb := subcommand(root, first)
	switch {
	case verb == nil, dash >= 0 && pos[0] > dash:
		// RELEASE CHART; after "--" nothing is a command.
		return prepend("upgrade", args)
	case len(pos) == 2 && !takes(verb, args[pos[1]]):
		// COMMAND CHART: the release named like the command, as it was
		// read before there were commands.
		return prepend("upgrade", args)
	}
	rest := append(append([]string{}, args[:pos[0]]...), args[pos[0]+1:]...)
	return prepend(first, rest)
}

func prepend(word string, args []string) []string {
	return append([]string{word}, args...)
}

// takes reports whether verb reads arg, its one argument, as its own: a
// command with subcommands takes one's name, any other what its Args
// accept (a release name for a verb that takes RELEASE: releaseArg).
func takes(verb *cobra.Command, arg string) bool {
	if verb.HasSubCommands() {
		return subcommand(verb, arg) != nil
	}
	return verb.Args == nil || verb.Args(verb, []string{arg}) == nil
}

// positionals returns the indexes of the arguments in args, flags and
// their values left out as pflag reads them with fs, and the index of
// "--" (-1 without one): every word after it is an argument.
func positionals(fs *pflag.FlagSet, args []string) (pos []int, dash int) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			for j := i + 1; j < len(args); j++ {
				pos = append(pos, j)
			}
			return pos, i
		case strings.HasPrefix(a, "--"):
			if !strings.Contains(a, "=") && takesValue(fs.Lookup(a[2:])) {
				i++
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			// Shorthands: -n NS, -nNS, -i, -if FILE.
			for k := 1; k < len(a); k++ {
				if takesValue(fs.ShorthandLookup(a[k : k+1])) {
					if k == len(a)-1 {
						i++
					}
					break
				}
			}
		default:
			pos = append(pos, i)
		}
	}
	return pos, -1
}

// takesValue reports whether f, when given without "=", takes the next
// word as its value. An unknown flag takes none (the command refuses it).
func takesValue(f *pflag.Flag) bool { return f != nil && f.NoOptDefVal == "" }

// flagArity is every flag of the tree, by name and shorthand, for telling
// flag values from arguments: a flag's name means one thing in every verb.
func flagArity(root *cobra.Command) *pflag.FlagSet {
	fs := pflag.NewFlagSet("arity", pflag.ContinueOnError)
	var add func(c *cobra.Command)
	add = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if fs.Lookup(f.Name) != nil {
				return
			}
			short := f.Shorthand
			if short != "" && fs.ShorthandLookup(short) != nil {
				short = ""
			}
			fs.VarPF(f.Value, f.Name, short, "").NoOptDefVal = f.NoOptDefVal
		})
		for _, sub := range c.Commands() {
			add(sub)
		}
	}
	add(root)
	if fs.Lookup("help") == nil {
		fs.BoolP("help", "h", false, "") // cobra adds it when the command runs
	}
	return fs
}
