package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/cli"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/injection"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// forgeRecordFields rewrites revision rev of release name in ns as anyone
// who may write Secrets there can: every text field of the record that a
// verb may print (chart name, version and appVersion, description, notes)
// set to text.
func forgeRecordFields(t *testing.T, c *testcluster.Cluster, ns, name string, rev int, text string) {
	t.Helper()
	cs := c.Clientset(t)
	key := fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, rev)
	s, err := cs.CoreV1().Secrets(ns).Get(t.Context(), key, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := releasestate.DecodeRecord(s.Data["release"], &rec); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	meta := rec["chart"].(map[string]any)["metadata"].(map[string]any)
	meta["name"], meta["version"], meta["appVersion"], meta["description"] = "app"+text, "1.0.0"+text, text, text
	info := rec["info"].(map[string]any)
	info["description"], info["notes"] = text, text
	data, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(data)
	w.Close()
	s.Data["release"] = []byte(base64.StdEncoding.EncodeToString(buf.Bytes()))
	if _, err := cs.CoreV1().Secrets(ns).Update(t.Context(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// outputFormat matches a command's -o help: "report format: text, json,
// markdown or sarif", "format: text, json, markdown".
var outputFormat = regexp.MustCompile(`--output string +(?:report )?format: ([a-z, ]+?)(?: \(default|$)`)

// commandOutputs are the commands of the tool with an -o of report
// formats, and those formats, as their help lists them: "" is the root
// command (the upgrade of RELEASE CHART).
func commandOutputs(t *testing.T) map[string][]string {
	t.Helper()
	root := helpOf("--help")
	var commands []string
	for _, line := range strings.Split(strings.SplitN(root, "Available Commands:", 2)[1], "\n")[1:] {
		f := strings.Fields(line)
		if len(f) == 0 {
			break
		}
		commands = append(commands, f[0])
	}
	out := map[string][]string{}
	for _, cmd := range append(commands, "") {
		args := []string{cmd, "--help"}
		if cmd == "" {
			args = args[1:]
		}
		help := helpOf(args...)
		for _, line := range strings.Split(help, "\n") {
			if m := outputFormat.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
				out[cmd] = strings.FieldsFunc(strings.ReplaceAll(m[1], " or ", ","), func(r rune) bool { return r == ',' || r == ' ' })
			}
		}
	}
	return out
}

// helpOf is the tool's help for args, run in-process without the test
// cluster's --kubeconfig (show-plan takes no cluster flag).
func helpOf(args ...string) string { return runOffline(args...).Stdout }

// runOffline runs the tool in-process without the test cluster's
// --kubeconfig: show-plan takes no cluster flag.
func runOffline(args ...string) result {
	var out, errOut bytes.Buffer
	streams := iostreams.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	code := cli.Execute("helm-safe-upgrade", args, streams, cli.BuildInfo{Version: "e2e", Commit: "test"})
	return result{Stdout: out.String(), Stderr: errOut.String(), Code: code}
}

// escapedTitle is the corpus's OSC 0 as an output shows it escaped: Go's
// \x1b or JSON's \u001b, Markdown's backslashes and brackets escaped
// once more.
var escapedTitle = regexp.MustCompile(`\\{1,2}(x1b|u001b)\\?\]0;pwned`)

// TestInjectionEveryVerb (issue 50): the injection corpus and a Secret
// value of the release (plain and base64) in every text field of a forged
// release record reach no output of any verb, in any format, raw: the
// table holds every command and format the tool's help lists (it fails
// when a new one is added without a case), each run on the forged record
// or exempt with the reason no record reaches it.
func TestInjectionEveryVerb(t *testing.T) {
	const canary = "record-canary-7c1e5a"
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	chart := func(version string) string {
		return writeChart(t, "app", version, map[string]string{
			"cm.yaml":     configMap(false, version),
			"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {pw: " + canary + "}\n",
		})
	}
	c.Helm(t, "install", "app", chart("1.0.0"), "-n", ns)
	c.Helm(t, "upgrade", "app", chart("2.0.0"), "-n", ns)
	hostile := injection.All() + " " + canary + " " + base64.StdEncoding.EncodeToString([]byte(canary))
	forgeRecordFields(t, c, ns, "app", 1, hostile)
	forgeRecordFields(t, c, ns, "app", 2, hostile)

	// show-plan prints the rollback of the forged record as it was saved.
	savedRollback := filepath.Join(t.TempDir(), "rollback.plan")
	if r := run(t, c, "rollback", "app", "1", "-n", ns, "--dry-run", "--plan-out", savedRollback, "--plan-unencrypted"); r.Code != 0 && r.Code != 3 {
		t.Fatalf("rollback --plan-out: exit %d\n%s", r.Code, r.Stderr)
	}
	// Each command's arguments, run once per format; exempt: why it is not run.
	// shows: the verb prints the forged record's chart (the upgrade
	// prints the new chart's), so the test also sees it there, escaped.
	cases := map[string]struct {
		args   []string
		shows  bool
		exempt string
		// offline: run without the cluster flags (show-plan).
		offline bool
	}{
		"":          {args: []string{"app", chart("3.0.0"), "--dry-run"}},
		"upgrade":   {args: []string{"upgrade", "app", chart("3.0.0"), "--dry-run"}},
		"rollback":  {args: []string{"rollback", "app", "1", "--dry-run"}, shows: true},
		"uninstall": {args: []string{"uninstall", "app", "--dry-run"}, shows: true},
		"status":    {args: []string{"status", "app"}, shows: true},
		"log":       {args: []string{"log", "app", "-p"}, shows: true},
		"diff":      {args: []string{"diff", "app", "1", "2"}, shows: true},
		"gitops":    {exempt: "plans two checkouts offline: it reads no release record (TestGitOpsLookupSecrets covers what a pull request's chart reads)"},
		"show-plan": {args: []string{"show-plan", savedRollback, "--plan-unencrypted"}, shows: true, offline: true},
	}
	outputs := commandOutputs(t)
	if len(outputs) < 5 {
		t.Fatalf("found the -o formats of only %v in the help", outputs)
	}
	for cmd, formats := range outputs {
		tc, ok := cases[cmd]
		if !ok {
			t.Errorf("command %q has -o %v but no case here: add one (or its exemption)", cmd, formats)
			continue
		}
		if tc.exempt != "" {
			continue
		}
		for _, format := range formats {
			name := strings.TrimSpace(cmd + " -o " + format)
			var r result
			if tc.offline {
				r = runOffline(append(slices.Clone(tc.args), "-o", format)...)
			} else {
				r = run(t, c, append(slices.Clone(tc.args), "-n", ns, "-o", format)...)
			}
			if r.Code != 0 && r.Code != 3 {
				t.Errorf("%s: exit %d\n%s", name, r.Code, r.Stderr)
			}
			noRawControl(t, map[string]string{name + " stdout": r.Stdout, name + " stderr": r.Stderr})
			for _, secret := range []string{canary, base64.StdEncoding.EncodeToString([]byte(canary))} {
				if strings.Contains(r.Stdout+r.Stderr, secret) {
					t.Errorf("%s shows the Secret value %q", name, secret)
				}
			}
			if tc.shows && format != "sarif" && !escapedTitle.MatchString(r.Stdout) {
				t.Errorf("%s does not show the forged chart at all, escaped:\n%s", name, r.Stdout)
			}
		}
	}
	for cmd := range cases {
		if _, ok := outputs[cmd]; !ok {
			t.Errorf("case %q: no such command with -o in the help", cmd)
		}
	}
}
