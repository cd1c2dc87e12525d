package shim

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// execCall is one hand-over the dispatcher asked for.
type execCall struct {
	path      string
	argv, env []string
}

func TestDispatcher(t *testing.T) {
	root := t.TempDir()
	// The release layout: bin/helm (the dispatcher) beside bin/helm-safe-upgrade;
	// DIR/helm, made by shim install, links to bin/helm.
	dispatcher := executable(t, filepath.Join(root, "bin", "helm"))
	tool := executable(t, filepath.Join(root, "bin", ToolName))
	shimDir := filepath.Join(root, "shim")
	os.MkdirAll(shimDir, 0o755)
	if err := os.Symlink(dispatcher, filepath.Join(shimDir, "helm")); err != nil {
		t.Fatal(err)
	}
	lone := executable(t, filepath.Join(root, "lone", "helm")) // no tool beside it
	real := executable(t, filepath.Join(root, "real", "helm"))
	list := func(dirs ...string) string { return strings.Join(dirs, string(os.PathListSeparator)) }
	helmEnv := []string{"A=1", GuardEnv + "=42"}

	for _, tt := range []struct {
		name   string
		self   string
		argv0  string
		noArgv bool
		panics bool
		args   []string
		env    map[string]string
		exec   error
		want   *execCall
		stderr string
	}{{
		name: "version goes to the real helm",
		self: dispatcher, args: []string{"version", "--short"}, env: map[string]string{"PATH": list(shimDir, filepath.Dir(real))},
		want: &execCall{real, []string{"helm", "version", "--short"}, helmEnv},
	}, {
		name: "an unknown command goes to the real helm",
		self: dispatcher, args: []string{"-n", "ns", "frobnicate"}, env: map[string]string{"PATH": list(shimDir, filepath.Dir(real))},
		want: &execCall{real, []string{"helm", "-n", "ns", "frobnicate"}, helmEnv},
	}, {
		name: "upgrade goes to the tool beside the dispatcher's file",
		self: filepath.Join(shimDir, "helm"), args: []string{"upgrade", "--install", "r", "c"},
		want: &execCall{tool, []string{"helm", "upgrade", "--install", "r", "c"}, []string{"A=1", DispatcherEnv + "=" + filepath.Join(shimDir, "helm")}},
	}, {
		name: "diff upgrade goes to the tool",
		self: dispatcher, args: []string{"--kube-context", "k", "diff", "upgrade", "r", "c"},
		want: &execCall{tool, []string{"helm", "--kube-context", "k", "diff", "upgrade", "r", "c"}, []string{"A=1", DispatcherEnv + "=" + dispatcher}},
	}, {
		name: "plugin list goes to the tool",
		self: dispatcher, args: []string{"plugin", "ls"},
		want: &execCall{tool, []string{"helm", "plugin", "ls"}, []string{"A=1", DispatcherEnv + "=" + dispatcher}},
	}, {
		name: "rollback goes to the tool",
		self: dispatcher, args: []string{"rollback", "r", "1"},
		want: &execCall{tool, []string{"helm", "rollback", "r", "1"}, []string{"A=1", DispatcherEnv + "=" + dispatcher}},
	}, {
		name: "uninstall's alias goes to the tool",
		self: dispatcher, args: []string{"-n", "old", "delete", "r"},
		want: &execCall{tool, []string{"helm", "-n", "old", "delete", "r"}, []string{"A=1", DispatcherEnv + "=" + dispatcher}},
	}, {
		name: "help of upgrade is Helm's",
		self: dispatcher, args: []string{"upgrade", "--help"}, env: map[string]string{"PATH": filepath.Dir(real)},
		want: &execCall{real, []string{"helm", "upgrade", "--help"}, helmEnv},
	}, {
		name: "a dispatcher under another name still hands upgrade over as helm",
		self: dispatcher, argv0: "/opt/bin/helm3", args: []string{"upgrade", "r", "c"},
		want: &execCall{tool, []string{"helm", "upgrade", "r", "c"}, []string{"A=1", DispatcherEnv + "=" + dispatcher}},
	}, {
		name: "no argv at all",
		self: dispatcher, noArgv: true, env: map[string]string{"PATH": filepath.Dir(real)},
		want: &execCall{real, []string{"helm"}, helmEnv},
	}, {
		name: "a panic is exit 1",
		self: dispatcher, args: []string{"list"}, env: map[string]string{"PATH": filepath.Dir(real)}, panics: true,
		stderr: "(a bug)",
	}, {
		name: "alone on PATH",
		self: dispatcher, args: []string{"version"}, env: map[string]string{"PATH": list(shimDir, filepath.Dir(dispatcher))},
		stderr: "no real helm found; set SAFE_UPGRADE_HELM",
	}, {
		name: "started by itself",
		self: dispatcher, args: []string{"version"}, env: map[string]string{"PATH": filepath.Dir(real), GuardEnv: "42"},
		stderr: "is the shim again",
	}, {
		name: "no tool beside it",
		self: lone, args: []string{"upgrade", "r", "c"},
		stderr: filepath.Join(root, "lone", ToolName),
	}, {
		name: "the real helm cannot start",
		self: dispatcher, args: []string{"list"}, env: map[string]string{"PATH": filepath.Dir(real)}, exec: errors.New("exec format error"),
		stderr: "running " + real + ": exec format error",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			var got *execCall
			var stderr bytes.Buffer
			environ := []string{"A=1", DispatcherEnv + "=/stale"}
			for k, v := range tt.env {
				if k == GuardEnv {
					environ = append(environ, k+"="+v)
				}
			}
			argv0 := "helm"
			if tt.argv0 != "" {
				argv0 = tt.argv0
			}
			argv := append([]string{argv0}, tt.args...)
			if tt.noArgv {
				argv = nil
			}
			code := Dispatcher{
				Argv: argv, Self: tt.self, PID: 42,
				Getenv: func(k string) string { return tt.env[k] }, Environ: environ, Stderr: &stderr,
				Exec: func(path string, argv, env []string) error {
					got = &execCall{path, argv, env}
					if tt.panics {
						panic("boom")
					}
					return tt.exec
				},
			}.Run()
			if tt.stderr != "" {
				if code != 1 || !strings.Contains(stderr.String(), tt.stderr) {
					t.Fatalf("exit %d, stderr %q; want exit 1 saying %q", code, stderr.String(), tt.stderr)
				}
				if tt.exec == nil && !tt.panics && got != nil {
					t.Fatalf("handed over to %v despite the error", got)
				}
				return
			}
			if code != 0 || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("exit %d, exec %+v, stderr %q; want %+v", code, got, stderr.String(), tt.want)
			}
		})
	}
}

// TestDispatcherDeps keeps the dispatcher's start-up small: cmd/helm-shim
// may import this package and the standard library only. One import of
// Helm's SDK or client-go (or of a YAML library) brings back hundreds of
// package initialisations that every passed-through helm command pays.
func TestDispatcherDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "../../cmd/helm-shim").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps cmd/helm-shim: %v\n%s", err, out)
	}
	const module = "github.com/safe-upgrade/helm-safe-upgrade/"
	allowed := map[string]bool{module + "cmd/helm-shim": true, module + "pkg/shim": true}
	var deps []string
	for _, p := range strings.Fields(string(out)) {
		if !allowed[p] {
			deps = append(deps, p)
		}
	}
	if len(deps) > 0 {
		t.Errorf("cmd/helm-shim imports %v: only package shim and the standard library are allowed", deps)
	}
	if len(strings.Fields(string(out))) != len(allowed) {
		t.Errorf("go list found %q; want %d packages beyond the standard library", out, len(allowed))
	}
}
