// Package shim is the pure core of the drop-in `helm`: the binary invoked
// under the name helm serves `helm upgrade`, `helm rollback` and `helm
// uninstall` (and, on request, `helm diff upgrade`) through the safe-upgrade gate and hands every other command to
// the real helm. This package decides which command a helm command line is,
// finds the real helm and the full tool, names the caller, and is the
// dispatcher (cmd/helm-shim) that hands each command to one of them;
// pkg/cli wires the full tool's side to the gate. It imports the standard
// library only (TestDispatcherDeps): the dispatcher's start-up is what every
// passed-through command pays.
package shim

import (
	"path/filepath"
	"strings"
)

// Name is the file name the binary answers to as the shim.
const Name = "helm"

// IsShim reports whether argv0 invokes the binary as the drop-in helm.
func IsShim(argv0 string) bool {
	return strings.TrimSuffix(filepath.Base(argv0), ".exe") == Name
}

// globalValueFlags are Helm's global flags that take a value (Helm 3's and
// Helm 4's: --content-cache and --color are Helm 4's), by long name and
// shorthand. A command line may give them before the command word.
var globalValueFlags = map[string]bool{
	"namespace": true, "n": true, "kubeconfig": true, "kube-context": true,
	"kube-token": true, "kube-as-user": true, "kube-as-group": true,
	"kube-apiserver": true, "kube-ca-file": true, "kube-tls-server-name": true,
	"registry-config": true, "repository-config": true, "repository-cache": true,
	"content-cache": true, "burst-limit": true, "qps": true, "color": true, "colour": true,
}

// globalBoolFlags are Helm's global flags that take no value.
var globalBoolFlags = map[string]bool{"debug": true, "kube-insecure-skip-tls-verify": true, "help": true, "h": true}

// Command is what a helm command line asks for.
type Command int

// The commands the shim tells apart.
const (
	// PassThrough: anything the real helm runs as it is.
	PassThrough Command = iota
	// Upgrade: helm upgrade, served through the gate.
	Upgrade
	// DiffUpgrade: helm diff upgrade (helm-diff's interface).
	DiffUpgrade
	// PluginList: helm plugin list (helm plugin ls).
	PluginList
	// Rollback: helm rollback, served through the gate.
	Rollback
	// Uninstall: helm uninstall (and its aliases delete, del, un), served
	// through the gate.
	Uninstall
)

// uninstallWords are helm uninstall's name and aliases (Helm 3 and 4).
var uninstallWords = map[string]bool{"uninstall": true, "delete": true, "del": true, "un": true}

// Classify returns what args (without argv[0]) ask for and the index of
// the command word in args (-1 for none). Help (-h, --help) is always
// passed through, as is a command line whose global flags the shim does not
// know (the real helm reports them).
func Classify(args []string) (Command, int) {
	words := positionals(args, 2)
	if len(words) == 0 || hasHelp(args) {
		return PassThrough, -1
	}
	first := args[words[0]]
	second := ""
	if len(words) > 1 {
		second = args[words[1]]
	}
	switch {
	case first == "upgrade":
		return Upgrade, words[0]
	case first == "rollback":
		return Rollback, words[0]
	case uninstallWords[first]:
		return Uninstall, words[0]
	case first == "diff" && second == "upgrade":
		return DiffUpgrade, words[0]
	case first == "plugin" && (second == "list" || second == "ls"):
		return PluginList, words[0]
	}
	return PassThrough, words[0]
}

// positionals returns the indexes of up to max words of args that are not
// flags or flag values, stopping at "--" and at a flag before the first word
// that is not one of Helm's global flags (its arity is unknown). After the
// first word any flag is taken as valueless: only the command path is
// looked for, and Helm's subcommand words come before their flags.
func positionals(args []string, max int) []int {
	var out []int
	for i := 0; i < len(args) && len(out) < max; i++ {
		a := args[i]
		switch {
		case a == "--":
			return out
		case a == "-" || !strings.HasPrefix(a, "-"):
			out = append(out, i)
		case len(out) == 0:
			name, hasValue := flagName(a)
			switch {
			case globalBoolFlags[name]:
			case globalValueFlags[name]:
				if !hasValue {
					i++ // the flag's value
				}
			default:
				return nil
			}
		}
	}
	return out
}

// flagName returns the name of the flag argument a (without dashes) and
// whether a carries its value (--name=value, -nvalue).
func flagName(a string) (string, bool) {
	if strings.HasPrefix(a, "--") {
		name, _, ok := strings.Cut(a[2:], "=")
		return name, ok
	}
	// -n, -nVALUE, -n=VALUE
	return a[1:2], len(a) > 2
}

// hasHelp reports whether args ask for help before any "--".
func hasHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "-h" || a == "--help" {
			return true
		}
	}
	return false
}
