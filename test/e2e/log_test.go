package e2e

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/testcluster"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
)

// logDoc mirrors the JSON log (`log -o json`), as a consumer reads it.
type logDoc struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Release    string `json:"release"`
	Revisions  []struct {
		Revision   int    `json:"revision"`
		Status     string `json:"status"`
		Operation  string `json:"operation"`
		Chart      string `json:"chart"`
		Computed   bool   `json:"computed"`
		Why        string `json:"why"`
		Helm       string `json:"helm"`
		By         *struct{ User, Caller, Command string }
		Summary    map[string]int `json:"summary"`
		Changes    []jsonChange   `json:"changes"`
		Recreated  []string       `json:"recreated"`
		Recoveries []struct {
			Line string `json:"line"`
		} `json:"recoveries"`
		Outcome *struct {
			AsPredicted int `json:"asPredicted"`
			Differ      int `json:"differ"`
			Failed      int `json:"failed"`
			Objects     []struct {
				Kind, Name, State, Reason string
			} `json:"objects"`
		} `json:"outcome"`
	} `json:"revisions"`
}

// readLog runs log with args and -o json, and decodes it.
func readLog(t *testing.T, c *testcluster.Cluster, args ...string) (*logDoc, result) {
	t.Helper()
	r := run(t, c, append(append([]string{"log"}, args...), "-o", "json")...)
	if r.Code != 0 {
		t.Fatalf("log: exit %d\n%s\n%s", r.Code, r.Stderr, r.Stdout)
	}
	var doc logDoc
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		t.Fatalf("decoding the log: %v\n%s", err, r.Stdout)
	}
	return &doc, r
}

// logChart is the release the log tests upgrade: a StatefulSet with
// claims (claim size), a Deployment (image), a ConfigMap (mode) and a
// Secret (password).
func logChart(t *testing.T, version, size, image, mode, password string, extra map[string]string) string {
	t.Helper()
	sts := baseSTS
	sts.size = size
	files := map[string]string{
		"sts.yaml":    sts.yaml(),
		"d.yaml":      deployment("web", image, "RollingUpdate", 2),
		"cm.yaml":     configMap(false, mode),
		"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\ndata:\n  pw: " + base64.StdEncoding.EncodeToString([]byte(password)) + "\n",
	}
	for k, v := range extra {
		files[k] = v
	}
	return writeChart(t, "app", version, files)
}

// TestLogComputedFromPlainHelm: a release only plain helm installed and
// upgraded has no record of the tool: `log` computes each revision's
// changes from the stored manifests (marked computed), -p shows verdicts
// and diffs, `diff REV1 REV2` classifies the same, and neither says the
// Secret's values, plain or base64, in any format.
func TestLogComputedFromPlainHelm(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	const pw1, pw2 = "log-computed-canary-one", "log-computed-canary-two"
	c.Helm(t, "install", "app", logChart(t, "1.0.0", "1Gi", "nginx:1.25", "a", pw1, nil), "-n", ns)
	c.Helm(t, "upgrade", "app", logChart(t, "1.1.0", "1Gi", "nginx:1.26", "b", pw2, nil), "-n", ns)

	doc, _ := readLog(t, c, "app", "-n", ns, "-p")
	if doc.Kind != "Log" || len(doc.Revisions) != 2 {
		t.Fatalf("log: kind %q, %d revisions, want Log with 2", doc.Kind, len(doc.Revisions))
	}
	up, inst := doc.Revisions[0], doc.Revisions[1]
	if up.Revision != 2 || !up.Computed || up.By != nil || up.Operation != "upgrade" || up.Chart != "app-1.1.0" {
		t.Errorf("revision 2: %+v, want the computed upgrade to app-1.1.0, by nobody recorded", up)
	}
	if inst.Revision != 1 || !inst.Computed || inst.Operation != "install" || inst.Summary["create"] != 4 {
		t.Errorf("revision 1: %+v, want the computed install creating 4 objects", inst)
	}
	verdicts := map[string]string{}
	for _, ch := range up.Changes {
		verdicts[ch.Kind+"/"+ch.Name] = ch.Class
		if ch.Diff == "" {
			t.Errorf("revision 2, %s/%s: no diff with -p", ch.Kind, ch.Name)
		}
	}
	want := map[string]string{"Deployment/web": "rolling", "ConfigMap/settings": "in-place", "Secret/creds": "in-place", "StatefulSet/db": ""}
	for obj, class := range want {
		if verdicts[obj] != class {
			t.Errorf("revision 2: %s is %q, want %q (all: %v)", obj, verdicts[obj], class, verdicts)
		}
	}
	if up.Summary["noop"] != 1 || up.Summary["rolling"] != 1 || up.Summary["inPlace"] != 2 || up.Summary["destructive"] != 0 {
		t.Errorf("revision 2's counts: %v", up.Summary)
	}

	canaries := secretCanaries(pw1, pw2)
	for _, args := range [][]string{
		{"log", "app", "-n", ns}, {"log", "app", "-n", ns, "-p"}, {"log", "app", "-n", ns, "-p", "-o", "markdown"},
		{"log", "app", "-n", ns, "-p", "-o", "json"}, {"diff", "app", "1", "2", "-n", ns},
		{"diff", "app", "1", "2", "-n", ns, "-o", "json"}, {"diff", "app", "2", "1", "-n", ns, "-o", "markdown"},
	} {
		r := run(t, c, args...)
		if r.Code != 0 {
			t.Errorf("%v: exit %d\n%s", args, r.Code, r.Stderr)
		}
		noCanary(t, strings.Join(args, " "), r.Stdout+r.Stderr, canaries)
	}
	text := run(t, c, "log", "app", "-n", ns, "-p")
	saysAll(t, "log -p", text.Stdout, "revision 2 (upgrade, deployed, computed)", "revision 1 (install, superseded, computed)",
		"not recorded (not applied by the tool)", "[computed from the stored manifests, offline]",
		"Deployment  "+ns+"/web", "rolling", "-      - image: nginx:1.25", "+      - image: nginx:1.26")

	r := run(t, c, "diff", "app", "1", "2", "-n", ns, "-o", "json")
	var p jsonPlan
	if err := json.Unmarshal([]byte(r.Stdout), &p); err != nil {
		t.Fatalf("diff -o json: %v\n%s", err, r.Stdout)
	}
	if web := p.change(t, "Deployment", "web"); web.Class != "rolling" || len(web.Reasons) == 0 {
		t.Errorf("diff 1 2: the Deployment %+v, want rolling with its reasons", web)
	}
	if r := run(t, c, "diff", "app", "1", "7", "-n", ns); r.Code != 1 || !strings.Contains(r.Stderr, "has no revision 7 (Helm keeps revisions 1 to 2)") {
		t.Errorf("diff to a revision that does not exist: exit %d\n%s", r.Code, r.Stderr)
	}
	if r := run(t, c, "log", "nothere", "-n", ns); r.Code != 1 || !strings.Contains(r.Stderr, `release "nothere"`) {
		t.Errorf("log of no release: exit %d\n%s", r.Code, r.Stderr)
	}
}

// revisionRecords returns the record ConfigMaps of release app in ns, by
// name, with their data as one string.
func revisionRecords(t *testing.T, c *testcluster.Cluster, ns string) map[string]string {
	t.Helper()
	list, err := c.Clientset(t).CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{LabelSelector: releasestate.RevisionRecordReleaseLabel + "=app"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, cm := range list.Items {
		var all strings.Builder
		for k, v := range cm.Data {
			all.WriteString(k + ": " + v + "\n")
		}
		out[cm.Name] = all.String()
	}
	return out
}
