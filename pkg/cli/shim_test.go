package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/shim"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/shim/helmdiff"
)

// shimRun is one run of the shim with fakes for the process around it.
type shimRun struct {
	Stdout, Stderr string
	Code           int
	// Exec is what the shim handed to the real helm (nil: nothing).
	Exec *execCall
}

type execCall struct {
	Path      string
	Argv, Env []string
}

// shimEnv is the fake process environment of a shim run.
type shimEnv struct {
	env  map[string]string
	dir  string // working directory
	self string // the shim's executable
}

// newShimEnv returns an environment whose PATH holds the shim (a link
// named helm to a stand-in executable) and, unless alone, a real helm after
// it; plugins live in an empty folder.
func newShimEnv(t *testing.T, alone bool) (*shimEnv, string) {
	t.Helper()
	root := t.TempDir()
	self := writeExecutable(t, filepath.Join(root, "tool", "helm-safe-upgrade"), "#!/bin/sh\nexit 99\n")
	shimDir := filepath.Join(root, "shim")
	os.MkdirAll(shimDir, 0o755)
	if err := os.Symlink(self, filepath.Join(shimDir, "helm")); err != nil {
		t.Fatal(err)
	}
	path := shimDir
	real := ""
	if !alone {
		real = writeExecutable(t, filepath.Join(root, "real", "helm"), "#!/bin/sh\nprintf 'NAME\\tVERSION\\tDESCRIPTION\\n'\n")
		path += string(os.PathListSeparator) + filepath.Dir(real)
	}
	dir := filepath.Join(root, "work")
	os.MkdirAll(dir, 0o755)
	return &shimEnv{env: map[string]string{"PATH": path, "HELM_PLUGINS": filepath.Join(root, "plugins")}, dir: dir, self: self}, real
}

func writeExecutable(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// run runs the shim invoked as helm with args.
func (e *shimEnv) run(t *testing.T, args ...string) shimRun {
	t.Helper()
	var out, errOut bytes.Buffer
	var r shimRun
	o := NewShimOptions(iostreams.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, BuildInfo{Version: "v0.0.0-test"}, "helm", args)
	o.Getenv = func(k string) string { return e.env[k] }
	o.Environ = []string{"A=1"}
	o.Self, o.Dir, o.PID, o.PPID = e.self, e.dir, 4242, os.Getpid()
	o.Exec = func(path string, argv, env []string) error {
		r.Exec = &execCall{Path: path, Argv: argv, Env: env}
		return errors.New("exec refused by the test")
	}
	r.Code = ExecuteShim(o)
	r.Stdout, r.Stderr = out.String(), errOut.String()
	return r
}

func TestShimPassThrough(t *testing.T) {
	e, real := newShimEnv(t, false)
	for _, args := range [][]string{
		{"version", "--short"},
		{"list", "-o", "json"},
		{"-n", "ns", "get", "values", "r"},
		{"upgrade", "--help"},
		{"diff", "revision", "r", "1", "2"},
		{"no-such-command"},
		{},
	} {
		r := e.run(t, args...)
		if r.Exec == nil {
			t.Fatalf("helm %q: not handed to the real helm (exit %d)\n%s", args, r.Code, r.Stderr)
		}
		want := execCall{Path: real, Argv: append([]string{"helm"}, args...), Env: []string{"A=1", shim.GuardEnv + "=4242"}}
		if !reflect.DeepEqual(*r.Exec, want) {
			t.Errorf("helm %q: exec %+v, want %+v", args, *r.Exec, want)
		}
		// Exec returns only when it failed: exit 1, saying so.
		if r.Code != ExitError || !strings.Contains(r.Stderr, "exec refused by the test") || r.Stdout != "" {
			t.Errorf("helm %q after a failed exec: exit %d, stdout %q, stderr %q", args, r.Code, r.Stdout, r.Stderr)
		}
	}
}

func TestShimWithoutRealHelm(t *testing.T) {
	e, _ := newShimEnv(t, true)
	r := e.run(t, "version")
	if r.Code != ExitError || r.Exec != nil || !strings.Contains(r.Stderr, "Error: no real helm found; set SAFE_UPGRADE_HELM") {
		t.Fatalf("shim alone: exit %d, exec %v, stderr %q", r.Code, r.Exec, r.Stderr)
	}
	// Started by itself (a copy of the shim as the "real" helm): stops.
	e, _ = newShimEnv(t, false)
	e.env[shim.GuardEnv] = "4242"
	r = e.run(t, "version")
	if r.Code != ExitError || r.Exec != nil || !strings.Contains(r.Stderr, "is the shim again") {
		t.Fatalf("looped shim: exit %d, exec %v, stderr %q", r.Code, r.Exec, r.Stderr)
	}
}

func TestShimPluginList(t *testing.T) {
	e, _ := newShimEnv(t, false)
	row := "diff\tv0.0.0-test\tserved by helm-safe-upgrade's helm shim (helm diff upgrade only; SAFE_UPGRADE_DIFF=0 turns it off)\n"
	for _, tt := range []struct {
		name, diffEnv string
		diffPlugin    bool
		// wantRow: the shim runs helm and adds its row; else it execs helm.
		wantRow bool
	}{
		{name: "no helm-diff: the shim serves diff", wantRow: true},
		{name: "helm-diff installed", diffPlugin: true},
		{name: "SAFE_UPGRADE_DIFF=0", diffEnv: "0"},
		{name: "SAFE_UPGRADE_DIFF=1 with helm-diff", diffEnv: "1", diffPlugin: true, wantRow: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e.env[helmdiff.Env] = tt.diffEnv
			plugin := filepath.Join(e.env["HELM_PLUGINS"], "helm-diff")
			os.RemoveAll(plugin)
			if tt.diffPlugin {
				os.MkdirAll(plugin, 0o755)
				os.WriteFile(filepath.Join(plugin, "plugin.yaml"), []byte("name: diff\nversion: 3.15.0\n"), 0o644)
			}
			r := e.run(t, "plugin", "list")
			if !tt.wantRow {
				if r.Exec == nil {
					t.Fatalf("plugin list not handed to the real helm: %+v", r)
				}
				return
			}
			if r.Code != 0 || r.Exec != nil || r.Stdout != "NAME\tVERSION\tDESCRIPTION\n"+row {
				t.Fatalf("exit %d, exec %v, stdout %q, stderr %q", r.Code, r.Exec, r.Stdout, r.Stderr)
			}
		})
	}
}

// TestShimUpgradeGate serves helm upgrade offline (no cluster): blocked
// without acknowledgements, with the ack-file rule shown, and let through by
// the ack file the rule names; stdout, Helm's, stays empty.
func TestShimUpgradeGate(t *testing.T) {
	e, _ := newShimEnv(t, false)
	acks := filepath.Join(t.TempDir(), "acks.yaml")
	os.WriteFile(acks, []byte("- kind: StatefulSet\n  namespace: demo\n  name: demo-db\n  reason: reviewed\n"), 0o644)
	upgrade := []string{"-n", "demo", "upgrade", "--install", "demo", demoV2, "--force", "--offline", "--from-chart", demo}
	for _, tt := range []struct {
		name    string
		env     map[string]string
		cwdAcks bool
		args    []string
		code    int
		stderr  []string
		// notStderr must not be on stderr.
		notStderr string
	}{
		{name: "--force left out, said so", args: upgrade, code: ExitBlocked, stderr: []string{"helm (safe-upgrade shim): --force not passed to Helm, which would replace every object with PUT; an immutable change goes through the gate's acknowledged safe recreate instead (SAFE_UPGRADE_FORCE=keep passes it on)"},
			notStderr: "--force: Helm replaces every object that exists with PUT"},
		{name: "--force kept with SAFE_UPGRADE_FORCE=keep", env: map[string]string{ForceEnv: ForceKeep, AckFileEnv: acks}, args: upgrade, code: ExitOK,
			stderr: []string{"--force: Helm replaces every object that exists with PUT"}, notStderr: "not passed to Helm"},
		{name: "--force=false: nothing to say", args: append(upgrade, "--force=false"), code: ExitBlocked, stderr: []string{"recreate-required"}, notStderr: "not passed to Helm"},
		{name: "bad SAFE_UPGRADE_FORCE", env: map[string]string{ForceEnv: "yes"}, args: upgrade, code: ExitError, stderr: []string{"Error: SAFE_UPGRADE_FORCE=yes: want keep"}},
		{name: "blocked", args: upgrade, code: ExitBlocked, stderr: []string{"recreate-required", "helm (safe-upgrade shim): acknowledgements come from the file SAFE_UPGRADE_ACK_FILE names, else .safe-upgrade-acks.yaml in the working directory (none found)"}},
		{name: "blocked --dry-run exits 0 as helm's does", args: append(upgrade, "--dry-run"), code: ExitOK, stderr: []string{"recreate-required", "(none found)", "helm (safe-upgrade shim): --dry-run: nothing was written; exit 0 as helm upgrade --dry-run, though the upgrade itself would be blocked as above"}},
		{name: "blocked --dry-run=server", args: append(upgrade, "--dry-run=server"), code: ExitOK, stderr: []string{"recreate-required", "would be blocked as above"}},
		{name: "--dry-run=false is no dry run", args: append(upgrade, "--dry-run=false"), code: ExitBlocked, stderr: []string{"recreate-required"}},
		{name: "ack file from the environment", env: map[string]string{AckFileEnv: acks}, args: upgrade, code: ExitOK, stderr: []string{"(1 acknowledged, 0 to acknowledge, 0 blocking)"}},
		{name: "ack file in the working directory", cwdAcks: true, args: upgrade, code: ExitOK, stderr: []string{"(1 acknowledged, 0 to acknowledge, 0 blocking)"}},
		{name: "missing ack file named", env: map[string]string{AckFileEnv: acks + ".nope"}, args: upgrade, code: ExitError, stderr: []string{"Error: SAFE_UPGRADE_ACK_FILE=" + acks + ".nope"}},
		{name: "helm's -o json refused", args: append(upgrade, "-o", "json"), code: ExitError, stderr: []string{"-o json: not supported through the safe-upgrade shim"}},
		{name: "unknown flag", args: append(upgrade, "--frobnicate"), code: ExitError, stderr: []string{"unknown flag: --frobnicate"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			delete(e.env, AckFileEnv)
			delete(e.env, ForceEnv)
			for k, v := range tt.env {
				e.env[k] = v
			}
			cwdAcks := filepath.Join(e.dir, DefaultAckFile)
			os.Remove(cwdAcks)
			if tt.cwdAcks {
				data, _ := os.ReadFile(acks)
				os.WriteFile(cwdAcks, data, 0o644)
			}
			r := e.run(t, tt.args...)
			if r.Code != tt.code || r.Exec != nil || r.Stdout != "" {
				t.Fatalf("exit %d (want %d), exec %v, stdout %q\nstderr:\n%s", r.Code, tt.code, r.Exec, r.Stdout, r.Stderr)
			}
			for _, want := range tt.stderr {
				if !strings.Contains(r.Stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
				}
			}
			if tt.notStderr != "" && strings.Contains(r.Stderr, tt.notStderr) {
				t.Errorf("stderr says %q:\n%s", tt.notStderr, r.Stderr)
			}
		})
	}
}

// TestShimRollbackUninstallFlags runs helm rollback and helm uninstall (and
// its aliases) through the shim up to where the tool's command reads its
// flags: served by the gate, never handed to the real helm, and a flag or
// argument the tool's command refuses fails before anything is read or
// written. The gate itself runs against a cluster in test/shim.
func TestShimRollbackUninstallFlags(t *testing.T) {
	e, _ := newShimEnv(t, false)
	for _, tt := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"rollback: unknown flag refused", []string{"rollback", "r", "1", "--frobnicate"}, "unknown flag: --frobnicate"},
		{"rollback: Helm 3's --recreate-pods refused", []string{"rollback", "r", "--recreate-pods"}, "unknown flag: --recreate-pods"},
		{"rollback: bad revision", []string{"-n", "ns", "rollback", "r", "one"}, `REVISION "one" is not a revision number`},
		{"rollback: -o json refused", []string{"rollback", "r", "-o", "json"}, "helm rollback -o json: not supported through the safe-upgrade shim"},
		{"rollback: bad wait strategy", []string{"rollback", "r", "--wait=soon"}, "--wait=soon"},
		{"rollback: bad --server-side", []string{"rollback", "r", "--server-side=yes"}, `invalid --server-side "yes"`},
		{"delete: Helm 2's --purge refused", []string{"delete", "--purge", "r"}, "unknown flag: --purge"},
		{"delete: one release at a time", []string{"delete", "a", "b"}, "uninstall expects RELEASE, got 2 argument(s)"},
		{"del: bad cascade", []string{"del", "r", "--cascade", "sideways"}, `--cascade "sideways"`},
		{"un: bad release name", []string{"un", "Not_A_Release"}, `uninstall "Not_A_Release"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := e.run(t, tt.args...)
			if r.Code != ExitError || r.Exec != nil || r.Stdout != "" {
				t.Fatalf("exit %d (want %d), exec %v, stdout %q\nstderr:\n%s", r.Code, ExitError, r.Exec, r.Stdout, r.Stderr)
			}
			if !strings.Contains(r.Stderr, tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, r.Stderr)
			}
		})
	}
}

// TestShimDiff serves helm diff upgrade offline with helm-diff's exit codes.
func TestShimDiff(t *testing.T) {
	e, _ := newShimEnv(t, false)
	diff := func(chart string, extra ...string) []string {
		return append([]string{"diff", "upgrade", "--allow-unreleased", "demo", chart, "-n", "demo", "--offline", "--from-chart", demo, "--suppress-secrets", "--three-way-merge", "--no-color", "--context", "2"}, extra...)
	}
	for _, tt := range []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{name: "changes, detailed exit code", args: diff(demoV2, "--detailed-exitcode"), code: 2, stdout: []string{"recreate-required", "StatefulSet"}},
		{name: "changes, plain exit code", args: diff(demoV2), code: 0, stdout: []string{"recreate-required"}},
		{name: "no changes", args: diff(demo, "--detailed-exitcode"), code: 0},
		{name: "unknown flag warned", args: diff(demo, "--frobnicate=1"), code: 0, stderr: []string{"helm diff (safe-upgrade shim): --frobnicate=1: unknown flag, ignored"}},
		{name: "json", args: diff(demoV2, "--output", "json"), code: 0, stdout: []string{`"apiVersion": "safe-upgrade/v1"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := e.run(t, tt.args...)
			if r.Code != tt.code || r.Exec != nil {
				t.Fatalf("exit %d (want %d), exec %v\nstdout:\n%s\nstderr:\n%s", r.Code, tt.code, r.Exec, r.Stdout, r.Stderr)
			}
			for _, want := range tt.stdout {
				if !strings.Contains(r.Stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, r.Stdout)
				}
			}
			for _, want := range tt.stderr {
				if !strings.Contains(r.Stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
				}
			}
			if strings.Contains(r.Stdout, "\x1b[") {
				t.Errorf("--no-color: stdout has colour codes")
			}
		})
	}
	// With helm-diff installed the plugin answers.
	e.env[helmdiff.Env] = "0"
	if r := e.run(t, diff(demoV2)...); r.Exec == nil {
		t.Errorf("SAFE_UPGRADE_DIFF=0: diff not handed to the real helm (exit %d)", r.Code)
	}
}

func TestDiffExitCode(t *testing.T) {
	for _, tt := range []struct {
		code     int
		detailed bool
		want     int
	}{
		{ExitOK, true, 0}, {ExitPending, true, 2}, {ExitBlocked, true, 2}, {ExitBlocked, false, 0}, {ExitError, true, 1}, {ExitError, false, 1},
	} {
		if got := diffExitCode(tt.code, tt.detailed); got != tt.want {
			t.Errorf("diffExitCode(%d, %v) = %d, want %d", tt.code, tt.detailed, got, tt.want)
		}
	}
}

func TestWriteHelmStatus(t *testing.T) {
	deployed := time.Date(2026, 12, 1, 16, 6, 25, 0, time.UTC)
	rel := func(notes string, hooks ...*release.Hook) *release.Release {
		return &release.Release{Name: "demo", Namespace: "prod", Version: 3, Hooks: hooks,
			Info: &release.Info{Status: release.StatusDeployed, Notes: notes, LastDeployed: helmtime.Time{Time: deployed}}}
	}
	const table = "NAME: demo\nLAST DEPLOYED: Tue Dec  1 16:06:25 2026\nNAMESPACE: prod\nSTATUS: deployed\nREVISION: 3\n"
	for _, tt := range []struct {
		name      string
		rel       *release.Release
		installed bool
		hideNotes bool
		want      string
	}{
		{name: "upgraded with notes", rel: rel("\n  Visit http://demo\n\n"),
			want: "Release \"demo\" has been upgraded. Happy Helming!\n" + table + "TEST SUITE: None\nNOTES:\nVisit http://demo\n"},
		{name: "installed", rel: rel(""), installed: true,
			want: "Release \"demo\" does not exist. Installing it now.\n" + table + "TEST SUITE: None\n"},
		{name: "notes hidden, test hooks", rel: rel("x", &release.Hook{Events: []release.HookEvent{release.HookTest}}), hideNotes: true,
			want: "Release \"demo\" has been upgraded. Happy Helming!\n" + table},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := writeHelmStatus(&b, tt.rel, tt.installed, tt.hideNotes); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", b.String(), tt.want)
			}
		})
	}
}

func TestShimInstall(t *testing.T) {
	root := t.TempDir()
	self := writeExecutable(t, filepath.Join(root, "tool", "helm-safe-upgrade"), "#!/bin/sh\n")
	dispatcher := writeExecutable(t, filepath.Join(root, "tool", "helm"), "#!/bin/sh\n")
	real := writeExecutable(t, filepath.Join(root, "real", "helm"), "#!/bin/sh\n")
	dir := filepath.Join(root, "bin")
	install := func(dir string) (string, string, error) {
		return installShim(self, real, dir)
	}
	out, _, err := install(dir)
	if err != nil || !strings.Contains(out, "installed "+filepath.Join(dir, "helm")) || !strings.Contains(out, "the real helm: "+real) {
		t.Fatalf("first install: %v\n%s", err, out)
	}
	if got, err := filepath.EvalSymlinks(filepath.Join(dir, "helm")); err != nil || got != dispatcher {
		t.Fatalf("%s/helm resolves to %q, %v; want the dispatcher %s", dir, got, err, dispatcher)
	}
	if out, _, err := install(dir); err != nil || !strings.Contains(out, "already the safe-upgrade shim") {
		t.Fatalf("second install: %v\n%s", err, out)
	}
	// The shim of before the dispatcher, a link to the tool itself, is replaced.
	old := filepath.Join(root, "old")
	os.MkdirAll(old, 0o755)
	if err := os.Symlink(self, filepath.Join(old, "helm")); err != nil {
		t.Fatal(err)
	}
	if got, err := filepath.EvalSymlinks(filepath.Join(old, "helm")); err != nil || got != self {
		t.Fatalf("setup: %v %s", err, got)
	}
	if out, _, err := install(old); err != nil || !strings.Contains(out, "installed ") {
		t.Fatalf("install over a link to the tool: %v\n%s", err, out)
	}
	if got, err := filepath.EvalSymlinks(filepath.Join(old, "helm")); err != nil || got != dispatcher {
		t.Fatalf("%s/helm resolves to %q, %v after the install; want the dispatcher %s", old, got, err, dispatcher)
	}
	// Someone else's helm is left alone.
	other := filepath.Join(root, "other")
	writeExecutable(t, filepath.Join(other, "helm"), "#!/bin/sh\n")
	if _, _, err := install(other); err == nil || !strings.Contains(err.Error(), "exists and is not the safe-upgrade shim") {
		t.Fatalf("install over another helm: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(other, "helm")); string(b) != "#!/bin/sh\n" {
		t.Fatalf("another helm was changed: %q", b)
	}
	// A file for DIR is bad input.
	if _, _, err := install(self); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("install into a file: %v", err)
	}
	// A tool without the dispatcher beside it says what is missing and installs nothing.
	lone := writeExecutable(t, filepath.Join(root, "lone", "helm-safe-upgrade"), "#!/bin/sh\n")
	empty := filepath.Join(root, "empty")
	if _, _, err := installShim(lone, real, empty); err == nil || !strings.Contains(err.Error(), filepath.Join(root, "lone", "helm")+" is missing") {
		t.Fatalf("install without the dispatcher: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(empty, "helm")); !os.IsNotExist(err) {
		t.Fatalf("install without the dispatcher left %s/helm: %v", empty, err)
	}
}

// installShim runs shim install DIR for the tool self with only real's
// folder on PATH.
func installShim(self, real, dir string) (string, string, error) {
	var out, errOut bytes.Buffer
	o := &ShimInstallOptions{Streams: iostreams.Streams{Out: &out, ErrOut: &errOut}, Self: self,
		Getenv: func(k string) string { return map[string]string{"PATH": filepath.Dir(real)}[k] }}
	err := o.Complete([]string{dir})
	if err == nil {
		err = o.Validate()
	}
	if err == nil {
		err = o.Run(context.Background())
	}
	return out.String(), errOut.String(), err
}
