package cli

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/injection"
)

// TestRenderErrorsKeepSecrets (issue 10): a template whose `fail` echoes a
// Secret value of the release — from the values, or read with lookup — exits
// 1 saying why, and the value, plain or base64, reaches no output format,
// stderr or the --debug log. Offline, the base manifest is the release
// (lookup answers with its objects).
func TestRenderErrorsKeepSecrets(t *testing.T) {
	const pw = "render-error-canary-7"
	b64 := base64.StdEncoding.EncodeToString([]byte(pw))
	base := filepath.Join(t.TempDir(), "base.yaml")
	if err := os.WriteFile(base, []byte("---\n# Source: app/templates/creds.yaml\napiVersion: v1\nkind: Secret\nmetadata: {name: creds}\ndata: {pw: "+b64+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	baseChart := tempChart(t, "1.0.0", "", map[string]string{"creds.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {pw: " + pw + "}\n"})
	lookup := `{{ $s := lookup "v1" "Secret" .Release.Namespace "creds" }}{{ fail (printf "found: %v" $s.data) }}`
	tests := []struct {
		name, template, says string
		args                 []string
	}{
		{"fail with a value", `{{ fail (printf "bad password: %s" .Values.pw) }}`, "bad password: ", []string{"--from-manifest", base, "--set", "pw=" + pw}},
		{"fail with a lookup", lookup, "found: ", []string{"--from-manifest", base}},
		{"fail with a lookup of the base chart's", lookup, "found: ", []string{"--from-chart", baseChart}},
	}
	for _, tt := range tests {
		chart := tempChart(t, "2.0.0", "", map[string]string{"creds.yaml": tt.template})
		for _, format := range []string{"text", "json", "markdown", "sarif", "text --debug"} {
			t.Run(tt.name+"/"+format, func(t *testing.T) {
				args := append([]string{"app", chart, "-n", "demo", "--offline", "-o"}, strings.Fields(format)...)
				out, errOut, code := execute(t, "helm-safe-upgrade", append(args, tt.args...)...)
				if code != ExitError || !strings.Contains(errOut, tt.says) {
					t.Fatalf("exit %d, want 1 saying %q:\n%s", code, tt.says, errOut)
				}
				for _, c := range []string{pw, b64} {
					if strings.Contains(out, c) || strings.Contains(errOut, c) {
						t.Errorf("the output holds %q:\n%s\n%s", c, out, errOut)
					}
				}
			})
		}
	}
}

// TestErrorLineEscaped (issue 40): the Error: line carries what Helm and
// the API server said; a template's `fail` echoing escape sequences, a
// 20 000-byte line and a Secret value of the release prints one line,
// escaped, bounded and masked.
func TestErrorLineEscaped(t *testing.T) {
	const pw = "error-line-canary-9"
	base := filepath.Join(t.TempDir(), "base.yaml")
	if err := os.WriteFile(base, []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {pw: "+pw+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// YAML's double-quoted escapes are Go's (\x1b, \u009b, …).
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("evil: "+strconv.QuoteToASCII(pw+" "+injection.All())+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	chart := tempChart(t, "2.0.0", "", map[string]string{"cm.yaml": `{{ fail (printf "bad: %s" .Values.evil) }}`})
	_, errOut, code := execute(t, "helm-safe-upgrade", "app", chart, "-n", "demo", "--offline", "--from-manifest", base, "-f", values)
	if code != ExitError || !strings.Contains(errOut, "Error: ") || !strings.Contains(errOut, `bad: (sensitive`) {
		t.Fatalf("exit %d, want 1 with an Error: line saying bad: and the masked value:\n%.500q", code, errOut)
	}
	if bad := injection.UnsafeLines(errOut); bad != "" {
		t.Errorf("stderr: %s", bad)
	}
	if strings.Contains(errOut, pw) {
		t.Errorf("stderr holds the Secret value")
	}
	if !strings.Contains(errOut, `\x1b]52;c;`) || !strings.Contains(errOut, "…[+") || len(errOut) > 2*redact.RecordLimit {
		t.Errorf("the Error: line is not escaped and bounded (%d bytes): %.300q", len(errOut), errOut)
	}
}
