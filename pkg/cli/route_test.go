package cli

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
)

// parse runs the command tree over args through the runF seam: the verb
// the line was read as and its options, described; nothing runs.
func parse(t *testing.T, argv0 string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := NewFactory(iostreams.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	got := "nothing ran"
	code := f.executeTree(argv0, args, BuildInfo{Version: "test"}, func(opts any) error {
		got = describe(opts)
		return nil
	})
	return got, errOut.String(), code
}

// describe names the verb of opts and the arguments it read.
func describe(opts any) string {
	var parts []string
	switch o := opts.(type) {
	case *UpgradeOptions:
		parts = []string{"upgrade", o.Request.ReleaseName, o.Request.ChartRef}
		if o.Recover {
			parts = append(parts, "--recover")
		}
		if o.DryRun {
			parts = append(parts, "--dry-run")
		}
		if ns := o.Settings.Namespace(); ns != "default" {
			parts = append(parts, "-n "+ns)
		}
	case *RecoverOptions:
		parts = []string{"recover", o.Release}
		if o.Yes {
			parts = append(parts, "--yes")
		}
		if ns := o.Settings.Namespace(); ns != "default" {
			parts = append(parts, "-n "+ns)
		}
	case *RollbackOptions:
		parts = []string{"rollback", o.Upgrade.Request.ReleaseName}
		if o.Revision != 0 {
			parts = append(parts, fmt.Sprint(o.Revision))
		}
		if o.DryRun {
			parts = append(parts, "--dry-run")
		}
		if ns := o.Settings.Namespace(); ns != "default" {
			parts = append(parts, "-n "+ns)
		}
	case *UninstallOptions:
		parts = []string{"uninstall", o.Request.ReleaseName}
		if o.DryRun {
			parts = append(parts, "--dry-run")
		}
		if o.KeepHistory {
			parts = append(parts, "--keep-history")
		}
		parts = append(parts, "--cascade "+o.Cascade)
		if ns := o.Settings.Namespace(); ns != "default" {
			parts = append(parts, "-n "+ns)
		}
	case *StatusOptions:
		parts = append([]string{"status"}, o.Request.Releases...)
		if o.AllNamespaces {
			parts = append(parts, "-A")
		}
		if ns := o.Settings.Namespace(); ns != "default" {
			parts = append(parts, "-n "+ns)
		}
	case *ShowPlanOptions:
		parts = []string{"show-plan", o.Path, "-o " + o.Output}
	case *GitOpsOptions:
		parts = []string{"gitops", o.Request.Base, o.Request.Head, "-o " + o.Report.Output}
	case *ShimInstallOptions:
		parts = []string{"shim install", filepath.Base(o.Dir)}
	case *GuardOptions:
		parts = []string{"guard " + o.Verb}
		if o.DryRun {
			parts = append(parts, "--dry-run")
		}
		if o.Output != "" {
			parts = append(parts, "-o "+o.Output)
		}
	case *LogOptions:
		parts = []string{"log", o.Request.ReleaseName, "-o " + o.Output}
		if o.Patch {
			parts = append(parts, "-p")
		}
		if o.MaxCount != 0 {
			parts = append(parts, fmt.Sprintf("--max-count %d", o.MaxCount))
		}
		if ns := o.Settings.Namespace(); ns != "default" {
			parts = append(parts, "-n "+ns)
		}
	case *DiffOptions:
		parts = []string{"diff", o.Request.ReleaseName, fmt.Sprint(o.Request.From), fmt.Sprint(o.Request.To), "-o " + o.Output}
		if ns := o.Settings.Namespace(); ns != "default" {
			parts = append(parts, "-n "+ns)
		}
	default:
		parts = []string{"unknown options"}
	}
	return strings.Join(slicesCompact(parts), " ")
}

func slicesCompact(parts []string) []string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// TestReadingRule: every command line of before the command tree is read
// as it was, a release named like each command stays reachable (the old
// way where the second argument cannot be the command's, and always with
// the upgrade verb), and each verb is reached in its own shape.
func TestReadingRule(t *testing.T) {
	t.Setenv("HELM_NAMESPACE", "")
	tests := []struct {
		name string
		args []string
		want string
	}{
		// Historical forms.
		{"release chart", []string{"demo", "./chart"}, "upgrade demo ./chart"},
		{"flags after", []string{"demo", "bitnami/postgresql", "-n", "ns", "--dry-run", "--version", "1.0.0"}, "upgrade demo bitnami/postgresql --dry-run -n ns"},
		{"flags before", []string{"-n", "ns", "--dry-run", "demo", "./chart"}, "upgrade demo ./chart --dry-run -n ns"},
		{"shorthand with its value attached", []string{"-nns", "demo", "./chart"}, "upgrade demo ./chart -n ns"},
		{"a flag value named like a command", []string{"--namespace", "recover", "demo", "./chart"}, "upgrade demo ./chart -n recover"},
		{"a value flag named like a command, with =", []string{"--namespace=show-plan", "demo", "oci://r/c"}, "upgrade demo oci://r/c -n show-plan"},
		{"--dry-run takes no separate value", []string{"--dry-run", "recover", "./chart"}, "upgrade recover ./chart --dry-run"},
		{"--recover RELEASE", []string{"demo", "--recover"}, "upgrade demo --recover"},
		{"--recover before", []string{"--recover", "--yes", "demo"}, "upgrade demo --recover"},
		{"--recover RELEASE CHART", []string{"demo", "./chart", "--recover", "--yes", "-n", "ns"}, "upgrade demo ./chart --recover -n ns"},
		{"show-plan FILE", []string{"show-plan", "plan.age"}, "show-plan plan.age -o text"},
		{"show-plan flags first", []string{"show-plan", "-o", "markdown", "plan.age"}, "show-plan plan.age -o markdown"},
		{"show-plan FILE named like a command", []string{"show-plan", "recover"}, "show-plan recover -o text"},
		{"show-plan as the GitHub Action runs it", []string{"show-plan", "plan.age", "-o", "markdown"}, "show-plan plan.age -o markdown"},
		{"shim install DIR", []string{"shim", "install", "bin"}, "shim install bin"},
		{"gitops BASE HEAD", []string{"gitops", "base/", "head/"}, "gitops base/ head/ -o text"},
		{"gitops flags first", []string{"-o", "sarif", "gitops", "base", "head", "--kube-version", "1.36.0"}, "gitops base head -o sarif"},
		{"release gitops, chart path", []string{"gitops", "./chart"}, "upgrade gitops ./chart"},
		{"guard install", []string{"guard", "install"}, "guard install"},
		{"guard install --dry-run -o yaml", []string{"guard", "install", "--dry-run", "-o", "yaml"}, "guard install --dry-run -o yaml"},
		{"guard flags first", []string{"--kube-context", "prod", "guard", "status"}, "guard status"},
		{"guard uninstall", []string{"guard", "uninstall"}, "guard uninstall"},
		{"bool shorthand and a value shorthand before", []string{"-i", "-f", "values.yaml", "demo", "./chart"}, "upgrade demo ./chart"},
		{"shorthands grouped, the last taking the value", []string{"-if", "values.yaml", "demo", "./chart"}, "upgrade demo ./chart"},

		// A release named like each command.
		{"release recover, chart path", []string{"recover", "./chart"}, "upgrade recover ./chart"},
		{"release recover, repo chart", []string{"recover", "bitnami/postgresql", "--dry-run"}, "upgrade recover bitnami/postgresql --dry-run"},
		{"release recover, archive", []string{"recover", "Chart-1.0.0.tgz"}, "upgrade recover Chart-1.0.0.tgz"},
		{"release recover, --recover", []string{"recover", "./chart", "--recover"}, "upgrade recover ./chart --recover"},
		{"release recover, value flags first", []string{"-f", "values.yaml", "--set", "a=b", "recover", "./chart"}, "upgrade recover ./chart"},
		{"release upgrade", []string{"upgrade", "./chart"}, "upgrade upgrade ./chart"},
		{"release upgrade, chart a name", []string{"upgrade", "mychart"}, "upgrade upgrade mychart"},
		{"release shim", []string{"shim", "./chart"}, "upgrade shim ./chart"},
		{"release guard, chart path", []string{"guard", "./chart"}, "upgrade guard ./chart"},
		{"release guard, chart install", []string{"upgrade", "guard", "install"}, "upgrade guard install"},
		{"release help", []string{"help", "./chart"}, "upgrade help ./chart"},
		{"release show-plan, upgrade verb", []string{"upgrade", "show-plan", "./chart"}, "upgrade show-plan ./chart"},
		{"release recover, upgrade verb", []string{"upgrade", "recover", "mychart"}, "upgrade recover mychart"},
		{"release upgrade, upgrade verb", []string{"upgrade", "upgrade", "./chart"}, "upgrade upgrade ./chart"},
		{"release shim, chart install", []string{"upgrade", "shim", "install"}, "upgrade shim install"},
		{"release help, upgrade verb", []string{"upgrade", "help", "recover"}, "upgrade help recover"},
		{"after --, nothing is a command", []string{"--", "recover", "mychart"}, "upgrade recover mychart"},
		{"release rollback, chart path", []string{"rollback", "./chart"}, "upgrade rollback ./chart"},
		{"release rollback, repo chart", []string{"rollback", "bitnami/postgresql", "--dry-run"}, "upgrade rollback bitnami/postgresql --dry-run"},
		{"release rollback, archive", []string{"rollback", "Chart-1.0.0.tgz"}, "upgrade rollback Chart-1.0.0.tgz"},
		{"release rollback, value flags first", []string{"-f", "values.yaml", "rollback", "./chart"}, "upgrade rollback ./chart"},
		{"release rollback, upgrade verb", []string{"upgrade", "rollback", "mychart"}, "upgrade rollback mychart"},
		{"release uninstall, chart path", []string{"uninstall", "./chart"}, "upgrade uninstall ./chart"},
		{"release uninstall, repo chart", []string{"uninstall", "bitnami/postgresql", "--dry-run"}, "upgrade uninstall bitnami/postgresql --dry-run"},
		{"release uninstall, upgrade verb", []string{"upgrade", "uninstall", "mychart"}, "upgrade uninstall mychart"},
		{"release status (a future verb)", []string{"status", "./chart"}, "upgrade status ./chart"},
		{"release log, chart path", []string{"log", "./chart"}, "upgrade log ./chart"},
		{"release log, repo chart", []string{"log", "bitnami/postgresql", "--dry-run"}, "upgrade log bitnami/postgresql --dry-run"},
		{"release log, upgrade verb", []string{"upgrade", "log", "mychart"}, "upgrade log mychart"},
		{"release diff, chart path", []string{"diff", "./chart"}, "upgrade diff ./chart"},
		{"release diff, archive", []string{"diff", "Chart-1.0.0.tgz", "-n", "ns"}, "upgrade diff Chart-1.0.0.tgz -n ns"},
		{"release diff, upgrade verb", []string{"upgrade", "diff", "mychart"}, "upgrade diff mychart"},

		// The verbs.
		{"upgrade RELEASE CHART", []string{"upgrade", "demo", "./chart", "--dry-run"}, "upgrade demo ./chart --dry-run"},
		{"flags before upgrade", []string{"-n", "ns", "upgrade", "demo", "./chart"}, "upgrade demo ./chart -n ns"},
		{"recover RELEASE", []string{"recover", "demo"}, "recover demo"},
		{"recover RELEASE with flags", []string{"recover", "demo", "--yes", "-n", "ns"}, "recover demo --yes -n ns"},
		{"flags before recover", []string{"-n", "ns", "recover", "my.db-1"}, "recover my.db-1 -n ns"},
		{"recover a release named recover", []string{"recover", "recover"}, "recover recover"},
		{"rollback RELEASE", []string{"rollback", "demo"}, "rollback demo"},
		{"rollback RELEASE REVISION", []string{"rollback", "demo", "1", "--dry-run"}, "rollback demo 1 --dry-run"},
		{"flags before rollback", []string{"-n", "ns", "--wait", "--timeout", "5m", "rollback", "my.db-1", "3"}, "rollback my.db-1 3 -n ns"},
		{"rollback a release named rollback", []string{"rollback", "rollback", "2"}, "rollback rollback 2"},
		{"rollback a release named like a revision", []string{"rollback", "7"}, "rollback 7"},
		{"uninstall RELEASE", []string{"uninstall", "demo"}, "uninstall demo --cascade background"},
		{"uninstall RELEASE with helm's flags", []string{"uninstall", "demo", "--dry-run", "--keep-history", "--cascade", "orphan", "-n", "ns"}, "uninstall demo --dry-run --keep-history --cascade orphan -n ns"},
		{"flags before uninstall", []string{"-n", "ns", "--cascade", "foreground", "uninstall", "my.db-1"}, "uninstall my.db-1 --cascade foreground -n ns"},
		{"uninstall a release named uninstall", []string{"uninstall", "uninstall"}, "uninstall uninstall --cascade background"},
		{"status RELEASE", []string{"status", "demo"}, "status demo"},
		{"status of several releases", []string{"status", "a", "b", "-n", "ns", "-o", "json"}, "status a b -n ns"},
		{"status of every release", []string{"status", "-A"}, "status -A"},
		{"status of a release named status", []string{"status", "status"}, "status status"},
		{"release status, chart path", []string{"status", "./chart"}, "upgrade status ./chart"},
		{"release status, repo chart", []string{"status", "bitnami/postgresql", "--dry-run"}, "upgrade status bitnami/postgresql --dry-run"},
		{"log RELEASE", []string{"log", "demo"}, "log demo -o text"},
		{"log RELEASE -p --max-count N -n NS", []string{"log", "demo", "-p", "--max-count", "3", "-n", "ns"}, "log demo -o text -p --max-count 3 -n ns"},
		{"flags before log", []string{"-n", "ns", "-o", "json", "log", "my.db-1"}, "log my.db-1 -o json -n ns"},
		{"log a release named log", []string{"log", "log"}, "log log -o text"},
		{"diff RELEASE REV1 REV2", []string{"diff", "demo", "2", "3"}, "diff demo 2 3 -o text"},
		{"diff RELEASE REV1 REV2 -o markdown", []string{"diff", "demo", "3", "1", "-o", "markdown", "-n", "ns"}, "diff demo 3 1 -o markdown -n ns"},
		{"diff a release named diff", []string{"diff", "diff", "1", "2"}, "diff diff 1 2 -o text"},
	}
	for _, tt := range tests {
		for _, argv0 := range []string{"helm-safe-upgrade", "kubectl-safe_upgrade"} {
			t.Run(argv0+" "+tt.name, func(t *testing.T) {
				got, errOut, code := parse(t, argv0, tt.args...)
				if code != ExitOK || got != tt.want {
					t.Errorf("%q: read as %q (exit %d), want %q\n%s", tt.args, got, code, tt.want, errOut)
				}
			})
		}
	}
}

// TestReadingRuleErrors: a line in a command's shape that the command
// refuses is an error naming it, never an upgrade.
func TestReadingRuleErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"recover"}, "recover expects RELEASE, got 0 argument(s)"},
		{[]string{"recover", "a", "b"}, "recover expects RELEASE, got 2 argument(s)"},
		{[]string{"recover", "demo", "-f", "values.yaml"}, "unknown shorthand flag: 'f'"},
		{[]string{"rollback"}, "rollback expects RELEASE [REVISION], got 0 argument(s)"},
		{[]string{"rollback", "demo", "1", "2"}, "rollback expects RELEASE [REVISION], got 3 argument(s)"},
		{[]string{"rollback", "demo", "last"}, `REVISION "last" is not a revision number`},
		{[]string{"rollback", "demo", "./chart"}, `REVISION "./chart" is not a revision number`},
		{[]string{"rollback", "demo", "-f", "values.yaml"}, "unknown shorthand flag: 'f'"},
		{[]string{"uninstall"}, "uninstall expects RELEASE, got 0 argument(s)"},
		{[]string{"uninstall", "a", "b"}, "uninstall expects RELEASE, got 2 argument(s)"},
		{[]string{"uninstall", "demo", "-f", "values.yaml"}, "unknown shorthand flag: 'f'"},
		{[]string{"status"}, "status expects RELEASE [RELEASE...], or -A for every release"},
		{[]string{"status", "demo", "-f", "values.yaml"}, "unknown shorthand flag: 'f'"},
		{[]string{"upgrade", "a", "b", "c"}, "expected RELEASE and CHART, got 3 argument(s)"},
		{[]string{"upgrade"}, "expected RELEASE and CHART, got 0 argument(s)"},
		{[]string{"shim"}, "shim expects a command: shim install DIR"},
		{[]string{"shim", "install"}, "accepts 1 arg(s), received 0"},
		{[]string{"shim", "remove", "dir"}, `unknown command "remove"`},
		{[]string{"guard"}, "guard expects a command: guard install, guard status or guard uninstall"},
		{[]string{"guard", "status", "extra"}, `unknown command "extra"`},
		{[]string{"guard", "status", "-o", "json"}, "unknown shorthand flag: 'o'"},
		{[]string{"show-plan"}, "show-plan expects FILE"},
		{[]string{"show-plan", "a", "b"}, "show-plan expects FILE, got 2"},
		{[]string{"log"}, "log expects RELEASE, got 0 argument(s)"},
		{[]string{"log", "a", "b"}, "log expects RELEASE, got 2 argument(s)"},
		{[]string{"diff"}, "diff expects RELEASE, got 0 argument(s)"},
		{[]string{"diff", "demo"}, "diff demo: expects RELEASE REV1 REV2"},
		{[]string{"diff", "demo", "1", "x"}, `diff: revision "x": want a revision number`},
		{[]string{"diff", "demo", "0", "2"}, `diff: revision "0": want a revision number`},
		{[]string{"diff", "demo", "1", "2", "3"}, "diff expects RELEASE REV1 REV2, got 4 argument(s)"},
		{[]string{"a", "b", "c"}, "expected RELEASE and CHART, got 3 argument(s)"},
		{[]string{"-n", "ns"}, "expected RELEASE and CHART, got 0 argument(s)"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, errOut, code := parse(t, "helm-safe-upgrade", tt.args...)
			if code != ExitError || got != "nothing ran" || !strings.Contains(errOut, tt.want) {
				t.Errorf("%q: exit %d, ran %q, want exit 1 saying %q:\n%s", tt.args, code, got, tt.want, errOut)
			}
		})
	}
}

// TestHelpOfEachCommand: --help (and help COMMAND) of every command shows
// its own usage, the root's also the reading rule and the commands.
func TestHelpOfEachCommand(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"helm safe-upgrade RELEASE CHART [flags]", "How a command line is read", "upgrade RELEASE CHART   always an upgrade", `"recover ./chart"`, "Available Commands:", "recover", "show-plan", "shim", "--dry-run", "Exit codes:"}},
		{[]string{"-h"}, []string{"helm safe-upgrade RELEASE CHART [flags]", "How a command line is read"}},
		{[]string{"help"}, []string{"helm safe-upgrade RELEASE CHART [flags]", "How a command line is read"}},
		{[]string{"upgrade", "--help"}, []string{"helm safe-upgrade upgrade RELEASE CHART [flags]", "--dry-run", "--ack"}},
		{[]string{"help", "upgrade"}, []string{"helm safe-upgrade upgrade RELEASE CHART [flags]"}},
		{[]string{"recover", "--help"}, []string{"helm safe-upgrade recover RELEASE [flags]", "--yes", "--timeout", "--namespace"}},
		{[]string{"help", "recover"}, []string{"helm safe-upgrade recover RELEASE [flags]"}},
		{[]string{"rollback", "--help"}, []string{"helm safe-upgrade rollback RELEASE [REVISION] [flags]", "--wait", "--cleanup-on-fail", "--history-max", "--no-hooks", "--force", "--ack", "--dry-run", "--detailed-exitcode", "--output"}},
		{[]string{"help", "rollback"}, []string{"helm safe-upgrade rollback RELEASE [REVISION] [flags]"}},
		{[]string{"uninstall", "--help"}, []string{"helm safe-upgrade uninstall RELEASE [flags]", "--keep-history", "--cascade", "--no-hooks", "--wait", "--timeout", "--description", "--dry-run", "--ack", "--output"}},
		{[]string{"help", "uninstall"}, []string{"helm safe-upgrade uninstall RELEASE [flags]"}},
		{[]string{"status", "--help"}, []string{"helm safe-upgrade status RELEASE [RELEASE...] [flags]", "--all-namespaces", "--detailed-exitcode", "--output", "managedFields"}},
		{[]string{"show-plan", "--help"}, []string{"helm safe-upgrade show-plan FILE [flags]", "--output"}},
		{[]string{"gitops", "--help"}, []string{"helm safe-upgrade gitops BASE HEAD [flags]", "HelmRelease", "Application", "--ack-file", "--detailed-exitcode", "--kube-version", "--live", "--output", DefaultAckFile}},
		{[]string{"log", "--help"}, []string{"helm safe-upgrade log RELEASE [flags]", "--patch", "--max-count", "--output", "--namespace", "computed"}},
		{[]string{"help", "log"}, []string{"helm safe-upgrade log RELEASE [flags]"}},
		{[]string{"diff", "--help"}, []string{"helm safe-upgrade diff RELEASE REV1 REV2 [flags]", "--output", "--diff-context", "--namespace"}},
		{[]string{"help", "diff"}, []string{"helm safe-upgrade diff RELEASE REV1 REV2 [flags]"}},
		{[]string{"shim", "--help"}, []string{"helm safe-upgrade shim [command]", "install"}},
		{[]string{"shim", "install", "--help"}, []string{"helm safe-upgrade shim install DIR"}},
		{[]string{"help", "shim", "install"}, []string{"helm safe-upgrade shim install DIR"}},
		{[]string{"guard", "--help"}, []string{"helm safe-upgrade guard [command]", "install", "status", "uninstall", "ValidatingAdmissionPolicy"}},
		{[]string{"guard", "install", "--help"}, []string{"helm safe-upgrade guard install [flags]", "--dry-run", "--output", "safe-upgrade.io/ack-delete"}},
		{[]string{"help", "guard", "uninstall"}, []string{"helm safe-upgrade guard uninstall [flags]"}},
		{[]string{"demo", "./chart", "--help"}, []string{"helm safe-upgrade upgrade RELEASE CHART [flags]"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, code := execute(t, "helm-safe-upgrade", tt.args...)
			if code != ExitOK {
				t.Fatalf("exit %d\n%s", code, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("no %q in:\n%s", w, out)
				}
			}
		})
	}
	out, _, _ := execute(t, "kubectl-safe_upgrade", "recover", "--help")
	if !strings.Contains(out, "kubectl safe-upgrade recover RELEASE") {
		t.Errorf("kubectl's recover --help:\n%s", out)
	}
}
