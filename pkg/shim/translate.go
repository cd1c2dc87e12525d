package shim

import (
	"fmt"
	"strconv"
	"strings"
)

// Invocation is a helm command line turned into the arguments of
// `helm safe-upgrade`, with what the shim itself must do about the flags it
// took out.
type Invocation struct {
	// Args are helm safe-upgrade's arguments.
	Args []string
	// NoColor: the command line asked for no colour (--no-color, --color never).
	NoColor bool
	// DetailedExitcode: helm diff's --detailed-exitcode (exit 2 on changes).
	DetailedExitcode bool
	// Warnings are one-line notes about flags accepted but not acted upon.
	Warnings []string
	// AckFileGiven: the command line names an ack file itself (--ack-file).
	AckFileGiven bool
	// DryRun: helm upgrade's --dry-run, in any spelling but false or none
	// (the last one given counts, as for Helm).
	DryRun bool
	// Force are the command line's --force and --force-replace arguments
	// as given, taken out of Args: the shim decides whether Helm gets them.
	// Forced says whether they ask for force (the last one given counts).
	Force  []string
	Forced bool
}

// FlagInfo tells whether helm safe-upgrade knows a flag (long name, or a
// one-letter shorthand) and whether it takes a value.
type FlagInfo func(name string) (known, takesValue bool)

// arg is one flag of a command line, split.
type arg struct {
	raw      string
	name     string // without dashes; "" for a positional argument
	value    string
	hasValue bool // value given in the same argument (--name=value, -nvalue)
}

func splitArg(a string) arg {
	if a == "-" || !strings.HasPrefix(a, "-") {
		return arg{raw: a}
	}
	if strings.HasPrefix(a, "--") {
		name, value, ok := strings.Cut(a[2:], "=")
		return arg{raw: a, name: name, value: value, hasValue: ok}
	}
	return arg{raw: a, name: a[1:2], value: strings.TrimPrefix(a[2:], "="), hasValue: len(a) > 2}
}

// nextArg returns the argument after the current one: consumed (a flag's
// separate value), or with peek only looked at.
type nextArg func(peek bool) (string, bool)

// walk calls visit for each argument of args after removing the command
// words at skip (their indexes); visit consumes through next the arguments
// after the current one that belong to it (a flag's separate value).
// Everything from "--" on is passed to keep as it is.
func walk(args []string, skip map[int]bool, visit func(a arg, next nextArg) error, keep func(string)) error {
	for i := 0; i < len(args); i++ {
		if skip[i] {
			continue
		}
		if args[i] == "--" {
			for _, rest := range args[i:] {
				keep(rest)
			}
			return nil
		}
		j := i
		next := func(peek bool) (string, bool) {
			if j+1 >= len(args) {
				return "", false
			}
			if peek {
				return args[j+1], true
			}
			j++
			return args[j], true
		}
		if err := visit(splitArg(args[i]), next); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// value returns the flag's value: in the same argument, or the next one.
func (a arg) valueFrom(next nextArg) (string, error) {
	if a.hasValue {
		return a.value, nil
	}
	v, ok := next(false)
	if !ok {
		return "", fmt.Errorf("flag needs an argument: %s", a.raw)
	}
	return v, nil
}

// helm4Globals are Helm 4's global flags that helm safe-upgrade (built on
// Helm 3's settings) does not know: the shim takes them out.
func helm4Global(a arg, next nextArg, inv *Invocation) (bool, error) {
	switch a.name {
	case "color", "colour":
		v := a.value
		if !a.hasValue {
			// Helm 4's --color takes a value; helm-diff's --color under
			// Helm 3 (helmfile diff --color) is a switch, followed by
			// anything.
			if v, _ = next(true); v == "never" || v == "auto" || v == "always" {
				next(false)
			} else {
				v = "always"
			}
		}
		if v == "never" {
			inv.NoColor = true
		}
		return true, nil
	case "content-cache":
		_, err := a.valueFrom(next)
		return true, err
	}
	return false, nil
}

// UpgradeArgs turns `helm [globals] upgrade [flags] RELEASE CHART [flags]`
// (the command word at index cmd) into helm safe-upgrade's arguments. Helm's
// -o/--output table is Helm's default and is dropped; json and yaml would
// print the release with its manifest and values, Secret values included,
// so they are refused. Helm 4's --wait=STRATEGY becomes --wait (watcher,
// legacy) or nothing (hookOnly). --force and --force-replace are taken out
// into Force: whether Helm gets them is the shim's decision.
func UpgradeArgs(args []string, cmd int) (Invocation, error) {
	return GateArgs(args, cmd, "helm upgrade")
}

// GateArgs turns a gated command line (Gated: helm upgrade, rollback or
// uninstall, named by verb in errors; the command word at index cmd) into
// the arguments of helm safe-upgrade's command of the same name, as
// UpgradeArgs says. Every other flag is passed on as it is: the tool's
// command refuses one it does not have (exit 1, nothing written), as for an
// upgrade.
func GateArgs(args []string, cmd int, verb string) (Invocation, error) {
	var inv Invocation
	err := walk(args, map[int]bool{cmd: true}, func(a arg, next nextArg) error {
		if handled, err := helm4Global(a, next, &inv); handled || err != nil {
			return err
		}
		switch a.name {
		case "o", "output":
			v, err := a.valueFrom(next)
			if err != nil {
				return err
			}
			if v != "table" {
				return fmt.Errorf("%s %s %s: not supported through the safe-upgrade shim: it would print the release's manifest and values, Secret values included (use -o table, Helm's default, and helm get ... after the upgrade)", verb, a.raw, v)
			}
			return nil
		case "wait":
			switch {
			case !a.hasValue || a.value == "true" || a.value == "watcher" || a.value == "legacy":
				inv.Args = append(inv.Args, "--wait")
			case a.value == "hookOnly" || a.value == "false":
			default:
				return fmt.Errorf("--wait=%s: want true, false, watcher, legacy or hookOnly", a.value)
			}
			return nil
		case "force", "force-replace":
			forced, err := boolValue(a)
			if err != nil {
				return err
			}
			inv.Force, inv.Forced = append(inv.Force, a.raw), forced
			return nil
		case "ack-file":
			inv.AckFileGiven = true
		case "dry-run":
			inv.DryRun = !a.hasValue || (a.value != "false" && a.value != "none")
		}
		inv.Args = append(inv.Args, a.raw)
		return nil
	}, func(s string) { inv.Args = append(inv.Args, s) })
	return inv, err
}

// boolValue is the value of a boolean flag: true unless given as
// --flag=VALUE.
func boolValue(a arg) (bool, error) {
	if !a.hasValue {
		return true, nil
	}
	v, err := strconv.ParseBool(a.value)
	if err != nil {
		return false, fmt.Errorf("%s: want true or false", a.raw)
	}
	return v, nil
}

// diffFlag is what the shim does with one of helm-diff's own flags.
type diffFlag struct {
	takesValue bool
	apply      func(v string, inv *Invocation)
}

// note returns a diffFlag that only warns.
func note(takesValue bool, why string) diffFlag {
	return diffFlag{takesValue: takesValue, apply: func(v string, inv *Invocation) {
		inv.Warnings = append(inv.Warnings, why)
	}}
}

// silent is a helm-diff flag whose behaviour the plan always has.
var silent = diffFlag{apply: func(string, *Invocation) {}}

// diffFlags are helm-diff's flags (v3.15) that helm safe-upgrade does not
// have under the same name.
var diffFlags = map[string]diffFlag{
	"allow-unreleased": {apply: func(_ string, inv *Invocation) { inv.Args = append(inv.Args, "--install") }},
	// The plan never shows a Secret value, is always three-way (last
	// release, new render, live) and compares normalised objects.
	"suppress-secrets":    silent,
	"three-way-merge":     silent,
	"normalize-manifests": silent,
	"detailed-exitcode":   {apply: func(_ string, inv *Invocation) { inv.DetailedExitcode = true }},
	"no-color":            {apply: func(_ string, inv *Invocation) { inv.NoColor = true }},
	"context":             {takesValue: true, apply: func(v string, inv *Invocation) { inv.Args = append(inv.Args, "--diff-context="+v) }},
	"output": {takesValue: true, apply: func(v string, inv *Invocation) {
		switch v {
		case "diff", "simple":
		case "json":
			inv.Args = append(inv.Args, "--output=json")
		default:
			inv.Warnings = append(inv.Warnings, fmt.Sprintf("--output %s: not served by the shim; showing the plan as text", v))
		}
	}},
	"suppress": {takesValue: true, apply: func(v string, inv *Invocation) {
		inv.Warnings = append(inv.Warnings, "--suppress "+v+": the plan shows every object (Secret values are never shown)")
	}},
	"suppress-output-line-regex": note(true, "--suppress-output-line-regex: ignored; the plan shows every changed line"),
	"find-renames":               note(true, "--find-renames: ignored; a rename shows as a delete and a create"),
	"show-secrets":               note(false, "--show-secrets: ignored; Secret values are never shown"),
	"show-secrets-decoded":       note(false, "--show-secrets-decoded: ignored; Secret values are never shown"),
	"strip-trailing-cr":          silent,
	"include-tests":              note(false, "--include-tests: ignored; test hooks are not part of the plan"),
	"disable-validation":         silent,
	// helm-diff renders with its own --kube-version and --api-versions;
	// the plan renders against the cluster's.
	"kube-version":   note(true, "--kube-version: ignored; the plan renders against the cluster's version"),
	"api-versions":   note(true, "--api-versions: ignored; the plan renders against the cluster's API versions"),
	"a":              note(true, "-a: ignored; the plan renders against the cluster's API versions"),
	"dry-run":        silent, // the plan is always a server dry-run
	"take-ownership": silent,
}

// DiffArgs turns `helm [globals] diff upgrade [flags] RELEASE CHART
// [flags]` (the word diff at index cmd, see Classify) into helm
// safe-upgrade's arguments for a plan (--dry-run). known tells which flags
// helm safe-upgrade has; helm-diff's own flags are translated (diffFlags)
// and any other flag is dropped with a warning — with its value when given
// as --flag=value, so an unknown flag's value must be given that way.
func DiffArgs(args []string, cmd int, known FlagInfo) (Invocation, error) {
	inv := Invocation{}
	up := cmd + 1
	for up < len(args) && args[up] != "upgrade" {
		up++
	}
	err := walk(args, map[int]bool{cmd: true, up: true}, func(a arg, next nextArg) error {
		if a.name == "" {
			inv.Args = append(inv.Args, a.raw)
			return nil
		}
		if handled, err := helm4Global(a, next, &inv); handled || err != nil {
			return err
		}
		if f, ok := diffFlags[a.name]; ok {
			v := a.value
			if f.takesValue {
				var err error
				if v, err = a.valueFrom(next); err != nil {
					return err
				}
			}
			f.apply(v, &inv)
			return nil
		}
		ok, takesValue := known(a.name)
		if !ok {
			inv.Warnings = append(inv.Warnings, fmt.Sprintf("%s: unknown flag, ignored", a.raw))
			return nil
		}
		inv.Args = append(inv.Args, a.raw)
		if takesValue && !a.hasValue {
			v, ok := next(false)
			if !ok {
				return fmt.Errorf("flag needs an argument: %s", a.raw)
			}
			inv.Args = append(inv.Args, v)
		}
		if a.name == "ack-file" {
			inv.AckFileGiven = true
		}
		return nil
	}, func(s string) { inv.Args = append(inv.Args, s) })
	// helm-diff prints the objects created and deleted whole: so does the
	// plan it asks for (--diff).
	inv.Args = append(inv.Args, "--dry-run", "--diff")
	if inv.DetailedExitcode {
		inv.Args = append(inv.Args, "--detailed-exitcode")
	}
	return inv, err
}
