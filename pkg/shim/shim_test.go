package shim

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestIsShim(t *testing.T) {
	for argv0, want := range map[string]bool{
		"helm": true, "/usr/local/bin/helm": true, `C:\bin\helm.exe`: true, "./helm": true,
		"helm-safe-upgrade": false, "kubectl-safe_upgrade": false, "helm3": false, "/helm/bin/x": false,
	} {
		if got := IsShim(strings.ReplaceAll(argv0, `\`, "/")); got != want {
			t.Errorf("IsShim(%q) = %v, want %v", argv0, got, want)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want Command
		idx  int
	}{
		{[]string{"upgrade", "r", "c"}, Upgrade, 0},
		{[]string{"upgrade", "--install", "r", "c", "--force"}, Upgrade, 0},
		{[]string{"-n", "ns", "upgrade", "r", "c"}, Upgrade, 2},
		{[]string{"--namespace=ns", "--debug", "--kube-context", "k", "upgrade", "r", "c"}, Upgrade, 4},
		{[]string{"-nns", "upgrade", "r", "c"}, Upgrade, 1},
		{[]string{"--color", "never", "upgrade", "r", "c"}, Upgrade, 2}, // Helm 4's global
		{[]string{"upgrade", "--help"}, PassThrough, -1},
		{[]string{"-h"}, PassThrough, -1},
		{[]string{"diff", "upgrade", "r", "c", "--allow-unreleased"}, DiffUpgrade, 0},
		{[]string{"--kubeconfig", "k", "diff", "upgrade", "r", "c"}, DiffUpgrade, 2},
		{[]string{"diff", "--suppress-secrets", "upgrade", "r", "c"}, DiffUpgrade, 0},
		{[]string{"diff", "revision", "r", "1", "2"}, PassThrough, 0},
		{[]string{"plugin", "list"}, PluginList, 0},
		{[]string{"plugin", "ls"}, PluginList, 0},
		{[]string{"plugin", "install", "x"}, PassThrough, 0},
		{[]string{"version", "--short"}, PassThrough, 0},
		{[]string{"list", "-o", "json"}, PassThrough, 0},
		{[]string{"template", "upgrade", "c"}, PassThrough, 0}, // a release named upgrade
		{[]string{"--unknown-global", "upgrade", "r", "c"}, PassThrough, -1},
		{[]string{"--", "upgrade"}, PassThrough, -1},
		{[]string{"rollback", "r", "1"}, Rollback, 0},
		{[]string{"-n", "ns", "rollback", "r", "--wait"}, Rollback, 2},
		{[]string{"rollback", "--help"}, PassThrough, -1},
		{[]string{"uninstall", "r", "-n", "old"}, Uninstall, 0},
		{[]string{"delete", "r"}, Uninstall, 0},
		{[]string{"--namespace", "ns", "del", "r"}, Uninstall, 2},
		{[]string{"un", "r", "--keep-history"}, Uninstall, 0},
		{[]string{"history", "r"}, PassThrough, 0},
		{[]string{"get", "manifest", "uninstall"}, PassThrough, 0}, // a release named uninstall
		{[]string{"plugin", "uninstall", "diff"}, PassThrough, 0},
		{[]string{"repo", "remove", "x"}, PassThrough, 0},
		{nil, PassThrough, -1},
	} {
		got, idx := Classify(tt.args)
		if got != tt.want || idx != tt.idx {
			t.Errorf("Classify(%q) = %v, %d; want %v, %d", tt.args, got, idx, tt.want, tt.idx)
		}
	}
}

func TestUpgradeArgs(t *testing.T) {
	for _, tt := range []struct {
		name    string
		args    []string
		want    []string
		noColor bool
		ackFile bool
		dryRun  bool
		force   []string
		forced  bool
		err     string
	}{
		{name: "flags anywhere", args: []string{"-n", "ns", "upgrade", "--install", "r", "c", "-f", "v.yaml", "--force", "--wait"},
			want: []string{"-n", "ns", "--install", "r", "c", "-f", "v.yaml", "--wait"}, force: []string{"--force"}, forced: true},
		{name: "helm 4 force-replace", args: []string{"upgrade", "r", "c", "--force-replace"}, want: []string{"r", "c"}, force: []string{"--force-replace"}, forced: true},
		{name: "force turned off, the last counts", args: []string{"upgrade", "--force", "r", "c", "--force=false"}, want: []string{"r", "c"}, force: []string{"--force", "--force=false"}},
		{name: "bad force value", args: []string{"upgrade", "r", "c", "--force=maybe"}, err: "--force=maybe: want true or false"},
		{name: "output table dropped", args: []string{"upgrade", "r", "c", "-o", "table", "--output=table"}, want: []string{"r", "c"}},
		{name: "output json refused", args: []string{"upgrade", "r", "c", "-o", "json"}, err: "-o json: not supported through the safe-upgrade shim"},
		{name: "output yaml refused", args: []string{"upgrade", "r", "c", "--output=yaml"}, err: "Secret values"},
		{name: "helm 4 globals", args: []string{"--color", "never", "upgrade", "r", "c", "--content-cache=/x"}, want: []string{"r", "c"}, noColor: true},
		{name: "helm 4 wait strategies", args: []string{"upgrade", "r", "c", "--wait=watcher", "--wait=hookOnly"}, want: []string{"r", "c", "--wait"}},
		{name: "bad wait", args: []string{"upgrade", "r", "c", "--wait=soon"}, err: "--wait=soon"},
		{name: "ack file given", args: []string{"upgrade", "r", "c", "--ack-file", "a.yaml"}, want: []string{"r", "c", "--ack-file", "a.yaml"}, ackFile: true},
		{name: "after --", args: []string{"upgrade", "r", "c", "--", "-o", "json"}, want: []string{"r", "c", "--", "-o", "json"}},
		{name: "missing value", args: []string{"upgrade", "r", "c", "-o"}, err: "flag needs an argument: -o"},
		{name: "dry run", args: []string{"upgrade", "--dry-run", "r", "c"}, want: []string{"--dry-run", "r", "c"}, dryRun: true},
		{name: "dry run on the server", args: []string{"upgrade", "r", "c", "--dry-run=server"}, want: []string{"r", "c", "--dry-run=server"}, dryRun: true},
		{name: "dry run turned off", args: []string{"upgrade", "r", "c", "--dry-run", "--dry-run=none"}, want: []string{"r", "c", "--dry-run", "--dry-run=none"}},
		{name: "dry run false", args: []string{"upgrade", "r", "c", "--dry-run=false"}, want: []string{"r", "c", "--dry-run=false"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, cmd := Classify(tt.args)
			inv, err := UpgradeArgs(tt.args, cmd)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(inv.Args, tt.want) || inv.NoColor != tt.noColor || inv.AckFileGiven != tt.ackFile || inv.DryRun != tt.dryRun {
				t.Errorf("got %q noColor=%v ackFile=%v dryRun=%v, want %q noColor=%v ackFile=%v dryRun=%v", inv.Args, inv.NoColor, inv.AckFileGiven, inv.DryRun, tt.want, tt.noColor, tt.ackFile, tt.dryRun)
			}
			if !reflect.DeepEqual(inv.Force, tt.force) || inv.Forced != tt.forced {
				t.Errorf("force %q forced=%v, want %q forced=%v", inv.Force, inv.Forced, tt.force, tt.forced)
			}
		})
	}
}

func TestGateArgs(t *testing.T) {
	for _, tt := range []struct {
		name   string
		args   []string
		verb   string
		want   []string
		dryRun bool
		force  []string
		err    string
	}{
		{name: "rollback's flags pass on", verb: "helm rollback",
			args: []string{"-n", "ns", "rollback", "r", "1", "--wait", "--timeout", "2m", "--cleanup-on-fail", "--no-hooks", "--history-max=5"},
			want: []string{"-n", "ns", "r", "1", "--wait", "--timeout", "2m", "--cleanup-on-fail", "--no-hooks", "--history-max=5"}},
		{name: "rollback's force is the shim's decision", verb: "helm rollback",
			args: []string{"rollback", "r", "--force"}, want: []string{"r"}, force: []string{"--force"}},
		{name: "rollback's helm 4 wait strategy", verb: "helm rollback",
			args: []string{"rollback", "r", "--wait=legacy"}, want: []string{"r", "--wait"}},
		{name: "rollback dry run", verb: "helm rollback",
			args: []string{"rollback", "r", "2", "--dry-run"}, want: []string{"r", "2", "--dry-run"}, dryRun: true},
		{name: "uninstall's flags pass on", verb: "helm uninstall",
			args: []string{"uninstall", "r", "--namespace", "old", "--keep-history", "--cascade", "foreground", "--description=x", "--timeout=1m"},
			want: []string{"r", "--namespace", "old", "--keep-history", "--cascade", "foreground", "--description=x", "--timeout=1m"}},
		{name: "an alias's flags pass on", verb: "helm uninstall",
			args: []string{"--kube-context", "k", "del", "r", "--wait=hookOnly", "--color", "never"}, want: []string{"--kube-context", "k", "r"}},
		{name: "uninstall dry run", verb: "helm uninstall",
			args: []string{"un", "--dry-run", "r"}, want: []string{"--dry-run", "r"}, dryRun: true},
		// An unknown flag goes on to the tool's command, which refuses it.
		{name: "unknown flag passed on", verb: "helm uninstall",
			args: []string{"delete", "--purge", "r"}, want: []string{"--purge", "r"}},
		{name: "output refused, named by the verb", verb: "helm rollback",
			args: []string{"rollback", "r", "-o", "json"}, err: "helm rollback -o json: not supported"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cmd, idx := Classify(tt.args)
			if !Gated(cmd) {
				t.Fatalf("Classify(%q) = %v, not a gated command", tt.args, cmd)
			}
			inv, err := GateArgs(tt.args, idx, tt.verb)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(inv.Args, tt.want) || inv.DryRun != tt.dryRun || !reflect.DeepEqual(inv.Force, tt.force) {
				t.Errorf("got %q dryRun=%v force=%q, want %q dryRun=%v force=%q", inv.Args, inv.DryRun, inv.Force, tt.want, tt.dryRun, tt.force)
			}
		})
	}
}

// known is a stand-in for helm safe-upgrade's flags.
func known(name string) (bool, bool) {
	switch name {
	case "namespace", "n", "values", "f", "set", "version", "output", "o", "diff-context", "ack-file":
		return true, true
	case "install", "i", "reset-values", "reuse-values", "debug", "dry-run", "detailed-exitcode":
		return true, false
	}
	return false, false
}

func TestDiffArgs(t *testing.T) {
	for _, tt := range []struct {
		name     string
		args     []string
		want     []string
		detailed bool
		noColor  bool
		warnings []string
	}{{
		name: "helmfile's diff",
		args: []string{"diff", "upgrade", "--allow-unreleased", "r", "c", "--namespace", "ns", "--values", "v.yaml", "--detailed-exitcode", "--reset-values"},
		want: []string{"--install", "r", "c", "--namespace", "ns", "--values", "v.yaml", "--reset-values", "--dry-run", "--diff", "--detailed-exitcode"}, detailed: true,
	}, {
		name: "helmsman's diff",
		args: []string{"diff", "upgrade", "r", "c", "--namespace", "ns", "--version", "1.2.3", "-f", "v.yaml", "--set", "a=b", "--suppress-secrets", "--no-color", "--context", "5"},
		want: []string{"r", "c", "--namespace", "ns", "--version", "1.2.3", "-f", "v.yaml", "--set", "a=b", "--diff-context=5", "--dry-run", "--diff"}, noColor: true,
	}, {
		name: "outputs",
		args: []string{"diff", "upgrade", "r", "c", "--output", "json", "--output=simple", "--output", "dyff"},
		want: []string{"r", "c", "--output=json", "--dry-run", "--diff"}, warnings: []string{"--output dyff: not served by the shim; showing the plan as text"},
	}, {
		name: "three-way merge, normalize, server dry-run are how the plan works",
		args: []string{"diff", "upgrade", "--three-way-merge", "--normalize-manifests", "--dry-run=server", "r", "c"},
		want: []string{"r", "c", "--dry-run", "--diff"},
	}, {
		name: "helmfile diff --color with Helm 3: helm-diff's switch, the next flag kept",
		args: []string{"diff", "upgrade", "--allow-unreleased", "r", "c", "--color", "--context", "3"},
		want: []string{"--install", "r", "c", "--diff-context=3", "--dry-run", "--diff"},
	}, {
		name: "Helm 4's --color with a value",
		args: []string{"--color", "never", "diff", "upgrade", "r", "c", "--context", "3"},
		want: []string{"r", "c", "--diff-context=3", "--dry-run", "--diff"}, noColor: true,
	}, {
		name: "suppress and unknown flags warn",
		args: []string{"-n", "ns", "diff", "upgrade", "r", "c", "--suppress", "Secret", "--frobnicate", "--level=3", "--show-secrets"},
		want: []string{"-n", "ns", "r", "c", "--dry-run", "--diff"},
		warnings: []string{"--suppress Secret: the plan shows every object (Secret values are never shown)",
			"--frobnicate: unknown flag, ignored", "--level=3: unknown flag, ignored", "--show-secrets: ignored; Secret values are never shown"},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			kind, cmd := Classify(tt.args)
			if kind != DiffUpgrade {
				t.Fatalf("Classify = %v", kind)
			}
			inv, err := DiffArgs(tt.args, cmd, known)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(inv.Args, tt.want) || inv.DetailedExitcode != tt.detailed || inv.NoColor != tt.noColor || !reflect.DeepEqual(inv.Warnings, tt.warnings) {
				t.Errorf("got %q detailed=%v noColor=%v warnings=%q\nwant %q detailed=%v noColor=%v warnings=%q",
					inv.Args, inv.DetailedExitcode, inv.NoColor, inv.Warnings, tt.want, tt.detailed, tt.noColor, tt.warnings)
			}
		})
	}
}

// executable writes an executable file and returns its path.
func executable(t *testing.T, path string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRealHelm(t *testing.T) {
	root := t.TempDir()
	self := executable(t, filepath.Join(root, "tool", "helm-safe-upgrade"))
	shimDir, linkDir, hardDir, realDir, emptyDir := filepath.Join(root, "shim"), filepath.Join(root, "link"), filepath.Join(root, "hard"), filepath.Join(root, "real"), filepath.Join(root, "empty")
	for _, d := range []string{shimDir, linkDir, hardDir, emptyDir} {
		os.MkdirAll(d, 0o755)
	}
	if err := os.Symlink(self, filepath.Join(shimDir, "helm")); err != nil {
		t.Fatal(err)
	}
	// A link to the link, and a hard link: still the shim's own file.
	if err := os.Symlink(filepath.Join(shimDir, "helm"), filepath.Join(linkDir, "helm")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(self, filepath.Join(hardDir, "helm")); err != nil {
		t.Fatal(err)
	}
	real := executable(t, filepath.Join(realDir, "helm"))
	notExec := filepath.Join(root, "noexec")
	os.MkdirAll(filepath.Join(notExec, "helm"), 0o755) // a folder named helm
	list := func(dirs ...string) string { return strings.Join(dirs, string(os.PathListSeparator)) }

	for _, tt := range []struct {
		name     string
		explicit string
		path     string
		want     string
		err      string
	}{
		{name: "next helm on PATH", path: list(shimDir, emptyDir, linkDir, hardDir, notExec, realDir), want: real},
		{name: "explicit wins", explicit: real, path: list(shimDir), want: real},
		{name: "shim alone", path: list(shimDir, linkDir, hardDir), err: "no real helm found; set SAFE_UPGRADE_HELM"},
		{name: "explicit is the shim", explicit: filepath.Join(linkDir, "helm"), path: list(realDir), err: "is this shim, not Helm"},
		{name: "explicit missing", explicit: filepath.Join(root, "nope"), path: list(realDir), err: "SAFE_UPGRADE_HELM=" + filepath.Join(root, "nope")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Lookup{Self: filepath.Join(shimDir, "helm"), Explicit: tt.explicit, Path: tt.path}.RealHelm()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %q, %v; want error %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestLooped(t *testing.T) {
	for _, tt := range []struct {
		guard string
		pid   int
		want  bool
	}{{"", 42, false}, {"42", 42, true}, {"41", 42, false}} {
		if got := Looped(tt.guard, tt.pid); got != tt.want {
			t.Errorf("Looped(%q, %d) = %v", tt.guard, tt.pid, got)
		}
	}
}

func TestCaller(t *testing.T) {
	if got := Caller(os.Getpid()); got == "" || (fileExists("/proc/self/comm") && strings.HasPrefix(got, "process ")) {
		t.Errorf("Caller(own pid) = %q, want this process's name", got)
	}
	if got := Caller(-1); got != "process -1" {
		t.Errorf("Caller(-1) = %q", got)
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
