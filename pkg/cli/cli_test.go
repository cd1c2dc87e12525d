package cli

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"github.com/spf13/cobra"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/panics"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/golden"
)

func execute(t *testing.T, argv0 string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Execute(argv0, args, iostreams.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, BuildInfo{Version: "v0.0.0-test", Commit: "abc123"})
	return out.String(), errOut.String(), code
}

func assertGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Assert(t, filepath.Join("testdata", name), []byte(got))
}

const demo = "../../testdata/charts/demo"
const demoV2 = "../../testdata/charts/demo-v2"

func TestVersionAndNames(t *testing.T) {
	out, _, code := execute(t, "/plugins/bin/helm-safe-upgrade", "--version")
	if code != 0 || !strings.Contains(out, "v0.0.0-test") || !strings.Contains(out, "abc123") || !strings.Contains(out, "helm SDK") {
		t.Fatalf("--version: %d %q", code, out)
	}
	for argv0, want := range map[string]string{"helm-safe-upgrade": "helm safe-upgrade RELEASE CHART", "kubectl-safe_upgrade": "kubectl safe-upgrade RELEASE CHART"} {
		out, _, code := execute(t, argv0, "--help")
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("%s --help: exit %d, want %q in:\n%s", argv0, code, want, out)
		}
	}
}

// TestOfflineGolden covers every output format through the whole command,
// offline so no cluster is needed (the cluster path is end-to-end tested).
func TestOfflineGolden(t *testing.T) {
	t.Setenv("GITHUB_ACTIONS", "")
	for _, format := range []string{"text", "json", "markdown", "sarif"} {
		t.Run(format, func(t *testing.T) {
			out, errOut, code := execute(t, "helm-safe-upgrade", "demo", demoV2, "-n", "demo", "--offline", "--from-chart", demo, "-o", format)
			if code != ExitBlocked {
				t.Fatalf("exit %d, want %d (blocked)\n%s", code, ExitBlocked, errOut)
			}
			assertGolden(t, "offline."+format, out)
			assertGolden(t, "offline.stderr", errOut)
		})
	}
}

func TestDetailedExitcode(t *testing.T) {
	_, errOut, code := execute(t, "helm-safe-upgrade", "demo", demo, "-n", "demo", "--offline", "--from-chart", demo, "--detailed-exitcode")
	if code != ExitOK {
		t.Fatalf("no changes: exit %d, want 0\n%s", code, errOut)
	}
	_, errOut, code = execute(t, "helm-safe-upgrade", "demo", demoV2, "-n", "demo", "--offline", "--from-chart", demo, "--detailed-exitcode",
		"--ack", "StatefulSet/demo/demo-db")
	if code != ExitPending {
		t.Fatalf("acked changes: exit %d, want 3\n%s", code, errOut)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	badValues := filepath.Join(dir, "values.yaml")
	os.WriteFile(badValues, []byte("web:\n  replicas: 2\n bad: [\n"), 0o644)
	planFile := func(content string) string {
		path := filepath.Join(dir, fmt.Sprintf("plan-%d.json", len(content)))
		os.WriteFile(path, []byte(content), 0o600)
		return path
	}
	link := filepath.Join(dir, "plan-link")
	os.Symlink(filepath.Join(dir, "elsewhere"), link)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"unknown flag", []string{"demo", demo, "--no-such-flag"}, []string{"--no-such-flag"}},
		{"missing arguments", []string{"demo"}, []string{"RELEASE and CHART"}},
		{"missing chart", []string{"demo", "/no/such/chart", "--offline", "--from-chart", demo}, []string{"/no/such/chart"}},
		{"values file with a YAML error", []string{"demo", demoV2, "--offline", "--from-chart", demo, "-f", badValues}, []string{badValues, "line 2"}},
		{"bad output format", []string{"demo", demo, "-o", "xml"}, []string{"--output", "xml"}},
		{"bad ack", []string{"demo", demo, "--ack", "StatefulSet"}, []string{"--ack", "StatefulSet"}},
		{"missing ack file", []string{"demo", demo, "--ack-file", "/no/acks.yaml"}, []string{"/no/acks.yaml"}},
		{"bad --server-side", []string{"demo", demo, "--server-side", "yes"}, []string{"--server-side", "yes"}},
		{"--force with --force-conflicts", []string{"demo", demo, "--force", "--force-conflicts"}, []string{"--force", "--force-conflicts"}},
		{"--force-replace with --force-conflicts", []string{"demo", demo, "--force-replace", "--force-conflicts"}, []string{"--force-replace", "--force-conflicts"}},
		{"offline without base", []string{"demo", demo, "--offline"}, []string{"--from-chart", "--from-manifest"}},
		{"unreachable cluster", []string{"demo", demo, "--dry-run", "--kube-apiserver", "https://127.0.0.1:1", "--timeout", "5s"}, []string{"cluster unreachable at https://127.0.0.1:1"}},
		{"recover with dry-run", []string{"demo", demo, "--recover", "--dry-run"}, []string{"--recover", "--dry-run"}},
		{"recover without a release", []string{"--recover"}, []string{"--recover expects RELEASE"}},
		{"--yes without --recover", []string{"demo", demo, "--yes"}, []string{"--yes confirms --recover only", "--ack"}},
		{"recover with three arguments", []string{"demo", demo, "extra", "--recover"}, []string{"--recover expects RELEASE", "3 argument(s)"}},
		// Accepted without CHART: it gets as far as the cluster.
		{"recover without a chart", []string{"demo", "--recover", "--kube-apiserver", "https://127.0.0.1:1", "--timeout", "5s"}, []string{"cluster unreachable at https://127.0.0.1:1"}},
		{"missing values file", []string{"demo", demo, "--offline", "--from-chart", demo, "-f", "/no/values.yaml"}, []string{"/no/values.yaml"}},
		{"bad --dry-run value", []string{"demo", demo, "--dry-run=maybe"}, []string{"maybe"}},
		{"bad --diff-context", []string{"demo", demo, "--diff-context", "-1"}, []string{"--diff-context"}},
		{"missing saved plan", []string{"demo", demo, "--plan", "/no/plan.json"}, []string{"--plan", "/no/plan.json"}},
		{"saved plan not JSON", []string{"demo", demo, "--plan", planFile("{"), "--plan-unencrypted"}, []string{"--plan", "not JSON"}},
		{"saved plan with a null hook", []string{"demo", demo, "--plan", planFile(`{"hooks": [null]}`), "--plan-unencrypted"}, []string{"--plan", "hooks[0] is null"}},
		{"saved plan with a null", []string{"demo", demo, "--plan", planFile(`{"hooks": null}`), "--plan-unencrypted"}, []string{"--plan", "hooks is null"}},
		{"saved plan with a wrong type", []string{"demo", demo, "--plan", planFile(`{"hooks": "x"}`), "--plan-unencrypted"}, []string{"--plan", "hooks"}},
		{"saved plan with an unknown field", []string{"demo", demo, "--plan", planFile(`{"extra": 1}`), "--plan-unencrypted"}, []string{"--plan", "extra"}},
		{"saved plan in clear without --plan-unencrypted", []string{"demo", demo, "--plan", planFile(`{}`)}, []string{"--plan", "not an age-encrypted plan", "--plan-unencrypted"}},
		{"--plan-out without a key", []string{"demo", demo, "--dry-run", "--plan-out", "/tmp/x.json"}, []string{"--plan-out", "no key", "--plan-recipient", "--plan-unencrypted"}},
		{"--plan-out with a bad recipient", []string{"demo", demo, "--dry-run", "--plan-out", "/tmp/x.json", "--plan-recipient", "age1bad"}, []string{`plan recipient "age1bad"`}},
		{"--plan-unencrypted with a recipient", []string{"demo", demo, "--dry-run", "--plan-out", "/tmp/x.json", "--plan-unencrypted", "--plan-recipient", "age1bad"}, []string{"--plan-unencrypted", "choose one"}},
		{"--plan-out a directory", []string{"demo", demo, "--dry-run", "--plan-out", dir, "--plan-unencrypted"}, []string{"--plan-out " + dir + ": a directory"}},
		{"--plan-out a symbolic link", []string{"demo", demo, "--dry-run", "--plan-out", link, "--plan-unencrypted"}, []string{"--plan-out " + link + ": a symbolic link; the plan is not written through it"}},
		{"--plan-recipient without --plan-out", []string{"demo", demo, "--dry-run", "--plan-recipient", "age1bad"}, []string{"--plan-recipient needs --plan-out"}},
		{"show-plan of a missing file", []string{"show-plan", "/no/plan"}, []string{"show-plan /no/plan: no such file"}},
		{"show-plan of a plan in clear", []string{"show-plan", planFile(`{}`)}, []string{"not an age-encrypted plan"}},
		{"show-plan with sarif", []string{"show-plan", "-o", "sarif", "/no/plan"}, []string{"--output", "sarif"}},
		{"show-plan without a file", []string{"show-plan"}, []string{"show-plan expects FILE"}},
		// The read-only verbs refuse their flags' bad values before reaching the cluster.
		{"status with yaml", []string{"status", "demo", "-o", "yaml"}, []string{`--output "yaml"`, "sarif"}},
		{"status with --timeout 0", []string{"status", "demo", "--timeout", "0"}, []string{"--timeout 0s: must be positive"}},
		{"log with sarif", []string{"log", "demo", "-o", "sarif"}, []string{`--output "sarif"`, "markdown"}},
		{"log with a negative --max-count", []string{"log", "demo", "--max-count", "-1"}, []string{"--max-count -1"}},
		{"log with --timeout 0", []string{"log", "demo", "--timeout", "0"}, []string{"--timeout 0s: must be positive"}},
		{"diff with sarif", []string{"diff", "demo", "1", "2", "-o", "sarif"}, []string{`--output "sarif"`, "markdown"}},
		{"diff with a negative --diff-context", []string{"diff", "demo", "1", "2", "--diff-context", "-1"}, []string{"--diff-context -1"}},
		{"diff with a negative --timeout", []string{"diff", "demo", "1", "2", "--timeout", "-1s"}, []string{"--timeout -1s: must be positive"}},
		{"--plan-max-age without --plan", []string{"demo", demo, "--plan-max-age", "1h"}, []string{"--plan-max-age", "--plan"}},
		{"--plan with --offline", []string{"demo", demo, "--offline", "--from-chart", demo, "--plan-out", "/tmp/x.json"}, []string{"--plan-out", "--offline"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := execute(t, "helm-safe-upgrade", tt.args...)
			if code != ExitError {
				t.Fatalf("exit %d, want 1\n%s", code, errOut)
			}
			// One error line, never a Go stack (that needs --debug).
			if strings.Contains(errOut, "goroutine ") || strings.Contains(errOut, ".go:") || strings.Contains(errOut, "panic") {
				t.Errorf("stderr shows a Go stack or panic:\n%s", errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("error %q does not name %q", errOut, w)
				}
			}
		})
	}
}

// TestSecretsNeverLeak: no value of a Secret, in clear or base64, reaches any
// output format or stderr.
func TestSecretsNeverLeak(t *testing.T) {
	values := filepath.Join(t.TempDir(), "v.yaml")
	os.WriteFile(values, []byte("db:\n  password: Sup3r-Secret-Value-42\n"), 0o644)
	secrets := []string{"demo-password", "Sup3r-Secret-Value-42",
		base64.StdEncoding.EncodeToString([]byte("demo-password")), base64.StdEncoding.EncodeToString([]byte("Sup3r-Secret-Value-42"))}
	for _, format := range []string{"text", "json", "markdown"} {
		out, errOut, code := execute(t, "helm-safe-upgrade", "demo", demo, "-n", "demo", "--offline", "--from-chart", demo, "-f", values, "-o", format)
		if code == ExitError {
			t.Fatalf("%s: exit 1\n%s", format, errOut)
		}
		if !strings.Contains(out, "password") {
			t.Fatalf("%s: the changed key is not shown at all:\n%s", format, out)
		}
		for _, s := range secrets {
			if strings.Contains(out, s) || strings.Contains(errOut, s) {
				t.Errorf("%s output leaks %q:\n%s\n%s", format, s, out, errOut)
			}
		}
	}
}

func TestGitHubActionsAnnotations(t *testing.T) {
	t.Setenv("GITHUB_ACTIONS", "true")
	out, errOut, code := execute(t, "helm-safe-upgrade", "demo", demoV2, "-n", "demo", "--offline", "--from-chart", demo, "-o", "json")
	if code != ExitBlocked || !strings.Contains(errOut, "::error title=safe-upgrade%3A recreate-required StatefulSet.apps/demo/demo-db::") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if strings.Contains(out, "::error") {
		t.Fatal("annotations leaked into the JSON on stdout")
	}
}

// panickingWriter panics on the first write: a bug anywhere in the run.
type panickingWriter struct{}

func (panickingWriter) Write([]byte) (int, error) { panic("writer exploded\nsecond line") }

// TestPanicExitsOne: a panic is exit 1 with a one-line error, never Go's
// exit 2 (the gate's "blocked"); the stack only with --debug or HELM_DEBUG.
func TestPanicExitsOne(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		helmDebug string
		stack     bool
	}{
		{"plain", nil, "", false},
		{"--debug", []string{"--debug"}, "", true},
		{"--debug=false", []string{"--debug=false"}, "", false},
		{"HELM_DEBUG", nil, "true", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HELM_DEBUG", tt.helmDebug)
			var errOut bytes.Buffer
			args := append([]string{"demo", demoV2, "-n", "demo", "--offline", "--from-chart", demo}, tt.args...)
			code := Execute("helm-safe-upgrade", args, iostreams.Streams{In: strings.NewReader(""), Out: panickingWriter{}, ErrOut: &errOut}, BuildInfo{Version: "test"})
			if code != ExitError {
				t.Fatalf("exit %d, want %d\n%s", code, ExitError, errOut.String())
			}
			stderr := errOut.String()
			first, rest, _ := strings.Cut(stderr, "\n")
			if !strings.HasPrefix(first, "Error: internal error: writer exploded") || strings.Contains(stderr, "second line") {
				t.Errorf("want a one-line error naming the panic, got:\n%s", stderr)
			}
			if hasStack := strings.Contains(rest, "goroutine") || strings.Contains(rest, ".go:"); hasStack != tt.stack {
				t.Errorf("stack shown: %v, want %v:\n%s", hasStack, tt.stack, stderr)
			}
		})
	}
}

// TestGoroutinePanicExitsOne: a panic recovered in a goroutine
// (internal/panics) reaches exitCode as an error: exit 1, one line, the
// stack only with debug.
func TestGoroutinePanicExitsOne(t *testing.T) {
	for _, debug := range []bool{false, true} {
		var errOut bytes.Buffer
		err := fmt.Errorf("planning: %w", panics.New("index out of range"))
		if code := exitCode(err, &errOut, debug); code != ExitError {
			t.Errorf("debug=%v: exit %d", debug, code)
		}
		lines := strings.Count(errOut.String(), "\n")
		if !strings.HasPrefix(errOut.String(), "Error: planning: internal error: index out of range\n") || (lines == 1) == debug {
			t.Errorf("debug=%v: got\n%s", debug, errOut.String())
		}
	}
}

// TestSecretCorpusNeverLeaks (issue 10) plans, offline, a base and a head
// holding Secrets in every shape the tool must recognise and greps every
// output format, stderr, the debug log and the GitHub annotations for
// every value, plain and base64: zero hits. (The shapes that need a server
// — admission messages — are covered end to end in test/e2e.)
func TestSecretCorpusNeverLeaks(t *testing.T) {
	b64 := func(v string) string { return base64.StdEncoding.EncodeToString([]byte(v)) }
	shapes := func(tag string) (map[string]string, []string) {
		v := func(name string) string { return "canary-" + name + "-" + tag }
		pem := "-----BEGIN KEY-----\nMIIBcanary" + tag + "Ogi\n-----END KEY-----"
		templates := map[string]string{
			"secret.yaml":  "apiVersion: v1\nkind: Secret\nmetadata: {name: plain}\ndata: {pw: " + b64(v("data")) + "}\nstringData: {pem: " + strconvQuote(pem) + "}\n",
			"lower.yaml":   "apiVersion: v1\nkind: secret\nmetadata: {name: lower}\nstringData: {pw: " + v("lower") + "}\n",
			"group.yaml":   "apiVersion: example.com/v1\nkind: SECRET\nmetadata: {name: group}\ndata: {pw: " + b64(v("group")) + "}\n",
			"unknown.yaml": "apiVersion: v1\nkind: Sekret\nmetadata: {name: unknown}\ndata: {pw: " + v("unknown") + "}\n",
			"list.yaml": "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: in-list}\n  stringData: {pw: " + v("list") + "}\n" +
				"---\napiVersion: v1\nkind: SecretList\nitems:\n- metadata: {name: in-typed-list}\n  data: {pw: " + b64(v("typedlist")) + "}\n",
			"annotated.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: annotated\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: " +
				"'{\"kind\":\"Secret\",\"data\":{\"pw\":\"" + b64(v("lastapplied")) + "\"}}'\ndata: {mode: " + tag + "}\n",
			"hook.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: hook\n  annotations: {helm.sh/hook: pre-upgrade}\nstringData: {pw: " + v("hook") + "}\n",
			// Issue 25: a Secret's value the chart copies elsewhere.
			"db.yaml":  "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: " + v("copied") + "}\n",
			"url.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: url}\ndata:\n  url: postgres://app:" + v("copied") + "@db:5432/app\n  b64: " + b64(v("copied")) + "\n",
			"migrate.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations: {helm.sh/hook: pre-upgrade}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n" +
				"      containers: [{name: m, image: migrate, command: [sh, -c, 'migrate --password " + v("copied") + "'], env: [{name: PW, value: " + v("copied") + "}]}]\n",
			"NOTES.txt": "Log in with password " + v("copied") + "\n",
		}
		var canaries []string
		for _, name := range []string{"data", "lower", "group", "unknown", "list", "typedlist", "lastapplied", "hook", "copied"} {
			canaries = append(canaries, v(name), b64(v(name)))
		}
		canaries = append(canaries, "MIIBcanary"+tag, b64(pem))
		return templates, canaries
	}
	dir := t.TempDir()
	head, headCanaries := shapes("new")
	chart := filepath.Join(dir, "chart")
	os.MkdirAll(filepath.Join(chart, "templates"), 0o755)
	os.WriteFile(filepath.Join(chart, "Chart.yaml"), []byte("apiVersion: v2\nname: corpus\nversion: 2.0.0\n"), 0o644)
	for name, content := range head {
		os.WriteFile(filepath.Join(chart, "templates", name), []byte(content), 0o644)
	}
	// Where the chart copies a Secret's value: each named by the warning.
	copies := []string{"ConfigMap/corpus/url holds a value of one of the release's Secrets in data.b64, data.url",
		"hook Job/migrate holds a value of one of the release's Secrets in spec.template.spec.containers[0].command[2], spec.template.spec.containers[0].env[0].value"}
	base, baseCanaries := shapes("old")
	delete(base, "hook.yaml") // a release manifest holds no hooks
	delete(base, "migrate.yaml")
	delete(base, "NOTES.txt")
	var manifest strings.Builder
	for name, content := range base {
		manifest.WriteString("---\n# Source: corpus/templates/" + name + "\n" + content)
	}
	baseFile := filepath.Join(dir, "base.yaml")
	os.WriteFile(baseFile, []byte(manifest.String()), 0o644)

	t.Setenv("GITHUB_ACTIONS", "true")
	for _, args := range [][]string{{"-o", "text"}, {"-o", "json"}, {"-o", "markdown"}, {"-o", "text", "--debug"}} {
		out, errOut, code := execute(t, "helm-safe-upgrade", append([]string{"corpus", chart, "-n", "corpus", "--offline", "--from-manifest", baseFile}, args...)...)
		if code == ExitError {
			t.Fatalf("%v: exit 1\n%s", args, errOut)
		}
		for _, name := range []string{"in-list", "in-typed-list", "lower", "unknown"} {
			if !strings.Contains(out, name) {
				t.Errorf("%v: %s is not in the plan", args, name)
			}
		}
		for _, c := range append(headCanaries, baseCanaries...) {
			if strings.Contains(out, c) || strings.Contains(errOut, c) {
				t.Errorf("%v: the output holds %q", args, c)
			}
		}
		for _, c := range copies {
			if !strings.Contains(errOut, "warning: "+c) {
				t.Errorf("%v: no warning %q on stderr:\n%s", args, c, errOut)
			}
			report := strings.NewReplacer(`\[`, "[", `\]`, "]").Replace(strings.Join(strings.Fields(out), " ")) // Markdown escapes
			if !strings.Contains(report, c) {
				t.Errorf("%v: the report does not say %q:\n%s", args, c, out)
			}
		}
	}
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", s) }

// TestDryRunSpellings: --dry-run takes helm upgrade's values.
func TestDryRunSpellings(t *testing.T) {
	tests := []struct {
		args []string
		want bool
		err  string
	}{
		{nil, false, ""},
		{[]string{"--dry-run"}, true, ""},
		{[]string{"--dry-run=client"}, true, ""},
		{[]string{"--dry-run=server"}, true, ""},
		{[]string{"--dry-run=true"}, true, ""},
		{[]string{"--dry-run=false"}, false, ""},
		{[]string{"--dry-run=none"}, false, ""},
		{[]string{"--dry-run=maybe"}, false, "want one of false, true, none, client, server"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			o := NewUpgradeOptions(iostreams.Streams{})
			cmd := &cobra.Command{}
			o.AddFlags(cmd)
			err := cmd.ParseFlags(tt.args)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.DryRun != tt.want {
				t.Errorf("DryRun = %v, want %v", o.DryRun, tt.want)
			}
		})
	}
}

func TestHideSecret(t *testing.T) {
	_, errOut, code := execute(t, "helm-safe-upgrade", "demo", demo, "--hide-secret", "--kube-apiserver", "https://127.0.0.1:1")
	if code != ExitError || !strings.Contains(errOut, "--hide-secret") || !strings.Contains(errOut, "needs --dry-run") {
		t.Fatalf("--hide-secret without --dry-run: exit %d\n%s", code, errOut)
	}
	values := filepath.Join(t.TempDir(), "v.yaml")
	os.WriteFile(values, []byte("db:\n  password: changed\n"), 0o644)
	out, errOut, code := execute(t, "helm-safe-upgrade", "demo", demo, "-n", "demo", "--offline", "--from-chart", demo, "-f", values, "--hide-secret")
	if code == ExitError {
		t.Fatalf("exit 1\n%s", errOut)
	}
	if !strings.Contains(out, "contents hidden (--hide-secret)") || strings.Contains(out, "(sensitive:") {
		t.Errorf("Secret contents shown with --hide-secret:\n%s", out)
	}
}

// TestOfflineNoise: offline, the head is rendered twice too, so a chart
// with a generated password compared with itself has no pending change.
func TestOfflineNoise(t *testing.T) {
	chart := filepath.Join(t.TempDir(), "noisy")
	os.MkdirAll(filepath.Join(chart, "templates"), 0o755)
	os.WriteFile(filepath.Join(chart, "Chart.yaml"), []byte("apiVersion: v2\nname: noisy\nversion: 1.0.0\n"), 0o644)
	os.WriteFile(filepath.Join(chart, "templates", "s.yaml"), []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\ndata: {password: {{ randAlphaNum 8 | b64enc | quote }}}\n"), 0o644)
	out, errOut, code := execute(t, "helm-safe-upgrade", "noisy", chart, "-n", "demo", "--offline", "--from-chart", chart, "--detailed-exitcode")
	if code != ExitOK || !strings.Contains(out, "(regenerated on every render)") || !strings.Contains(out, "1 regenerated") {
		t.Fatalf("exit %d, want 0 with the password labelled\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "Secret value rotated: data.password") || !strings.Contains(out, "lookup") {
		t.Errorf("no note that the upgrade rotates the password:\n%s", out)
	}
	_, errOut, code = execute(t, "helm-safe-upgrade", "noisy", chart, "-n", "demo", "--offline", "--from-chart", chart, "--detailed-exitcode", "--fail-on-regenerated")
	if code != ExitPending {
		t.Errorf("--fail-on-regenerated: exit %d, want 3\n%s", code, errOut)
	}
	_, errOut, code = execute(t, "helm-safe-upgrade", "noisy", chart, "-n", "demo", "--offline", "--from-chart", chart, "--fail-on-regenerated")
	if code != ExitError || !strings.Contains(errOut, "--fail-on-regenerated needs --dry-run --detailed-exitcode") {
		t.Errorf("--fail-on-regenerated alone: exit %d, want 1 naming the flag\n%s", code, errOut)
	}
}

// TestIgnoreRules: --ignore shows a change but does not count it; a field
// the server refuses to change is never ignored.
func TestIgnoreRules(t *testing.T) {
	image := "Deployment/demo-web:spec.template.spec.containers[0].image"
	out, errOut, code := execute(t, "helm-safe-upgrade", "demo", demoV2, "-n", "demo", "--offline", "--from-chart", demo,
		"--detailed-exitcode", "--ack", "StatefulSet/demo/demo-db", "--ignore", image, "--ignore", "spec.volumeClaimTemplates")
	if code != ExitPending {
		t.Fatalf("exit %d, want 3: the acknowledged StatefulSet still counts\n%s", code, errOut)
	}
	if !strings.Contains(out, "(ignored by rule --ignore "+image+")") || !strings.Contains(out, "1 ignored") || !strings.Contains(out, "recreate-required") {
		t.Errorf("report:\n%s", out)
	}
	_, errOut, code = execute(t, "helm-safe-upgrade", "demo", demo, "-n", "demo", "--offline", "--from-chart", demo, "--ignore", "Deployment:")
	if code != ExitError || !strings.Contains(errOut, `--ignore "Deployment:"`) {
		t.Errorf("bad rule: exit %d\n%s", code, errOut)
	}
}

// TestProgressOnTerminal: stage lines on stderr only when it is a terminal.
func TestProgressOnTerminal(t *testing.T) {
	for _, tty := range []bool{false, true} {
		var out, errOut bytes.Buffer
		streams := iostreams.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, ErrTTY: tty}
		Execute("helm-safe-upgrade", []string{"demo", demoV2, "-n", "demo", "--offline", "--from-chart", demo}, streams, BuildInfo{Version: "test"})
		got := strings.Contains(errOut.String(), "Rendering "+demoV2+" (head)…") && strings.Contains(errOut.String(), "Rendering again to find the fields regenerated on every render…")
		if got != tty {
			t.Errorf("stderr a terminal: %v; progress lines shown: %v\n%s", tty, got, errOut.String())
		}
	}
}

// TestCommandLine: the command recorded in the release's Lease names the
// flags given, never their values (a --set value can be a password).
func TestCommandLine(t *testing.T) {
	cmd := newRootCommand("helm-safe-upgrade", NewFactory(iostreams.Streams{}), nil)
	if err := cmd.ParseFlags([]string{"--set", "db.password=hunter2", "-n", "prod", "--ack-all-destructive"}); err != nil {
		t.Fatal(err)
	}
	got := commandLine("helm safe-upgrade", []string{"db", "./chart"}, cmd.Flags())
	if want := "helm safe-upgrade db ./chart --ack-all-destructive --namespace --set"; got != want || strings.Contains(got, "hunter2") {
		t.Errorf("command %q, want %q", got, want)
	}
	// A chart URL's password.
	got = commandLine("helm safe-upgrade", []string{"db", "https://ci:hunter2@charts.example.com/db-1.0.0.tgz"}, cmd.Flags())
	if want := "helm safe-upgrade db https://ci:xxxxx@charts.example.com/db-1.0.0.tgz --ack-all-destructive --namespace --set"; got != want {
		t.Errorf("command %q, want %q", got, want)
	}
}

// TestRepositoryPasswordNeverPrinted: Helm's error for a repository it
// cannot read quotes --repo's URL whole; a password in it (or in the
// CHART or a --values URL) is masked like a Secret's value, as written
// and decoded.
func TestRepositoryPasswordNeverPrinted(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"--repo", []string{"demo", "app", "--repo", "https://ci:hunter2%21x@127.0.0.1:1/charts"}},
		{"CHART", []string{"demo", "https://ci:hunter2%21x@127.0.0.1:1/charts/app-1.0.0.tgz"}},
		{"--values", []string{"demo", demoV2, "-f", "https://ci:hunter2%21x@127.0.0.1:1/values.yaml"}},
		{"--set-file", []string{"demo", demoV2, "--set-file", "a=https://ci:hunter2%21x@127.0.0.1:1/a.txt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := execute(t, "helm-safe-upgrade", append(tc.args, "-n", "demo", "--offline", "--from-chart", demo)...)
			if code != ExitError || !strings.Contains(errOut, "127.0.0.1:1") {
				t.Fatalf("exit %d, want 1 and an error naming the repository\n%s%s", code, errOut, out)
			}
			for _, form := range []string{"hunter2", "hunter2!x", "hunter2%21x"} {
				if strings.Contains(out+errOut, form) {
					t.Errorf("the password %q is printed:\n%s%s", form, errOut, out)
				}
			}
		})
	}
}

// TestWholeObjectsFlag (issue 54): an object to create is named in the
// table, its manifest printed only with -p/--diff; JSON has it either way.
func TestWholeObjectsFlag(t *testing.T) {
	chart := func(version string, templates map[string]string) string {
		dir := filepath.Join(t.TempDir(), "app")
		if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{"Chart.yaml": "apiVersion: v2\nname: app\nversion: " + version + "\n"}
		for name, text := range templates {
			files[filepath.Join("templates", name)] = text
		}
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\ndata: {a: b}\n"
	}
	base := chart("1.0.0", map[string]string{"a.yaml": cm("a")})
	head := chart("1.1.0", map[string]string{"a.yaml": cm("a"), "extra.yaml": cm("extra")})
	const manifest = "+++ head/ConfigMap/ns/extra"
	for _, tt := range []struct {
		flags []string
		want  string
		whole bool
	}{
		{nil, "Manifests of the 1 object to create not shown (the table names them): -p/--diff shows them.", false},
		{[]string{"-p"}, manifest, true},
		{[]string{"--diff"}, manifest, true},
		{[]string{"-o", "json"}, `"diff": "--- base/ConfigMap/ns/extra\n+++ head/ConfigMap/ns/extra`, true},
	} {
		out, errOut, code := execute(t, "helm-safe-upgrade", append([]string{"app", head, "-n", "ns", "--offline", "--from-chart", base}, tt.flags...)...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d\n%s", tt.flags, code, errOut)
		}
		if !strings.Contains(out, tt.want) || strings.Contains(out, manifest) != tt.whole || !strings.Contains(out, "extra") {
			t.Errorf("%v: want %q, the manifest shown %v:\n%s", tt.flags, tt.want, tt.whole, out)
		}
	}
}
