package e2e

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// logDoc mirrors the JSON log (`log -o json`), as a consumer reads it.
type logDoc struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Release    string `json:"release"`
	Revisions  []struct {
		Revision  int    `json:"revision"`
		Status    string `json:"status"`
		Operation string `json:"operation"`
		Chart     string `json:"chart"`
		Computed  bool   `json:"computed"`
		Why       string `json:"why"`
		Helm      string `json:"helm"`
		By        *struct{ User, Caller, Command string }
		Summary   map[string]int `json:"summary"`
		Changes   []jsonChange   `json:"changes"`
		Recreated []string       `json:"recreated"`
		Events    []struct {
			Kind string `json:"kind"`
			Line string `json:"line"`
		} `json:"events"`
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
		"not recorded: no record of the tool (plain helm, or before the tool)", "[computed from the stored manifests, offline]",
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

// TestLogOfToolRevisions (issue 35): a release installed by the tool, then
// upgraded by it three times — an acknowledged recreate, an apply killed
// mid-way and settled with recover, a rollout that fails — and once by
// plain helm. `log` shows the five revisions newest first: the tool's
// from their records (who ran each, the counts by verdict, the
// acknowledgement with its fingerprint and source, what was recreated, the
// outcome against the prediction, the recovery), the plain helm one
// computed from the stored manifests and marked so; `log -p` shows each
// change's verdict and diff. The Secret's values appear in no output and
// no record, plain or base64. A later upgrade with --history-max prunes the
// records of the revisions Helm pruned; a rollback is recorded as one; an
// uninstall --keep-history is the last revision's event.
func TestLogOfToolRevisions(t *testing.T) {
	c := testcluster.Get(t)
	c.RequireOwnCluster(t) // image tags fail only under kwok's stages
	ns := c.Namespace(t)
	boundVolumes(t, c, ns, "data-db-0", "data-db-1")
	const pw1, pw2, pw5 = "log-tool-canary-one", "log-tool-canary-two", "log-tool-canary-five"
	var outputs strings.Builder // every output of the tool, searched for the Secret's values
	tool := func(want int, args ...string) result {
		t.Helper()
		r := run(t, c, append(args, "-n", ns)...)
		outputs.WriteString(r.Stdout + r.Stderr)
		if r.Code != want {
			t.Fatalf("%v: exit %d, want %d\n%s\n%s", args, r.Code, want, r.Stderr, r.Stdout)
		}
		return r
	}

	// 1: installed by the tool.
	tool(0, "app", logChart(t, "1.0.0", "1Gi", "nginx:1.25", "a", pw1, nil), "--install")
	// 2: the claim template grows (recreate-required), acknowledged with
	// the plan's --ack; the Secret changes.
	v2 := logChart(t, "2.0.0", "2Gi", "nginx:1.25", "b", pw2, nil)
	p, pr := planJSON(t, c, "app", v2, "-n", ns)
	outputs.WriteString(pr.Stdout + pr.Stderr)
	sts := p.change(t, "StatefulSet", "db")
	tool(0, append([]string{"app", v2}, p.ackFlags()...)...)
	// 3: an acknowledged recreate killed while its hook waits, then
	// recovered (a recreate needs a deployed revision to check against:
	// before the failed rollout).
	killWaitingOnHook(t, c, ns, logChart(t, "3.0.0", "3Gi", "nginx:1.25", "b", pw2, map[string]string{"hook.yaml": waitHook}))
	tool(0, "recover", "app", "--yes")
	// 4: a rollout that fails (the new pods crash).
	tool(1, "app", logChart(t, "4.0.0", "2Gi", "nginx:crash", "b", pw2, nil))
	// 5: plain helm.
	c.Helm(t, "upgrade", "app", logChart(t, "5.0.0", "2Gi", "nginx:1.26", "c", pw5, nil), "-n", ns)

	doc, lr := readLog(t, c, "app", "-n", ns, "-p")
	outputs.WriteString(lr.Stdout + lr.Stderr)
	if len(doc.Revisions) != 5 {
		t.Fatalf("log: %d revisions, want 5:\n%s", len(doc.Revisions), lr.Stdout)
	}
	for i, rev := range doc.Revisions {
		if rev.Revision != 5-i {
			t.Fatalf("log entry %d is revision %d, want %d (newest first)", i, rev.Revision, 5-i)
		}
	}
	r5, r4, r3, r2, r1 := doc.Revisions[0], doc.Revisions[1], doc.Revisions[2], doc.Revisions[3], doc.Revisions[4]
	if !r5.Computed || r5.By != nil || r5.Status != "deployed" || r5.Summary["rolling"] != 1 {
		t.Errorf("revision 5 (plain helm): computed %v, by %+v, status %s, counts %v; want computed, nobody recorded, deployed, 1 rolling", r5.Computed, r5.By, r5.Status, r5.Summary)
	}
	if len(r3.Events) != 1 || r3.Events[0].Kind != "recover" || !strings.Contains(r3.Events[0].Line, "safe-upgrade --recover") || r3.Status != "failed" || !r3.Computed {
		t.Errorf("revision 3 (killed, recovered): status %s, computed %v, events %+v; want failed, its changes computed, one recovery", r3.Status, r3.Computed, r3.Events)
	}
	if r4.Computed || r4.Status != "superseded" || r4.Outcome == nil || r4.Outcome.Failed == 0 || r4.Summary["rolling"] != 1 || r4.By == nil || r4.By.User == "" {
		t.Errorf("revision 4 (failed rollout): %+v; want recorded by a user, 1 rolling, the outcome failed", r4)
	} else if ob := r4.Outcome.Objects; len(ob) == 0 || ob[0].Name != "web" || ob[0].State != "failed" || !strings.Contains(ob[0].Reason, "CrashLoopBackOff") {
		t.Errorf("revision 4's outcome: %+v, want Deployment web failed in CrashLoopBackOff", ob)
	}
	if r2.Computed || r2.Status != "superseded" || r2.Summary["recreate"] != 1 || r2.Summary["destructive"] != 1 || r2.Outcome == nil || r2.Outcome.Failed != 0 ||
		len(r2.Recreated) != 1 || r2.Recreated[0] != "StatefulSet.apps/"+ns+"/db" {
		t.Errorf("revision 2 (acknowledged recreate): %+v", r2)
	}
	acked := false
	for _, ch := range r2.Changes {
		if ch.Kind == "StatefulSet" && ch.Acknowledged && ch.Fingerprint == sts.Fingerprint && ch.Class == "recreate-required" && strings.Contains(ch.Diff, "storage: 2Gi") {
			acked = true
		}
	}
	if !acked {
		t.Errorf("revision 2: no acknowledged StatefulSet with fingerprint %s and its diff: %+v", sts.Fingerprint, r2.Changes)
	}
	if r1.Computed || r1.Operation != "install" || r1.Summary["create"] != 4 || r1.By == nil || !strings.Contains(r1.By.Command, "--install") {
		t.Errorf("revision 1 (the tool's install): %+v", r1)
	}

	text := tool(0, "log", "app", "-p")
	saysAll(t, "log -p", text.Stdout,
		"revision 5 (upgrade, deployed, computed)", "revision 4 (upgrade, superseded)", "revision 3 (upgrade, failed, computed)", "not recorded: the apply did not record its changes (interrupted)",
		"revision 2 (upgrade, superseded)", "revision 1 (install, superseded)",
		"Acknowledged: recreate-required StatefulSet.apps/"+ns+"/db@"+sts.Fingerprint+" via flag",
		"Recreated:    StatefulSet.apps/"+ns+"/db", "Recovered:", "safe-upgrade --recover",
		"Rollout:      1 failed or not ready (Deployment/"+ns+"/web failed:", "as predicted", "Outcome:      StatefulSet/"+ns+"/db: ",
		"-          storage: 1Gi", "+          storage: 2Gi", "not recorded: no record of the tool (plain helm, or before the tool)")
	tool(0, "log", "app", "-p", "-o", "markdown")
	if short, _ := readLog(t, c, "app", "-n", ns, "--max-count", "2"); len(short.Revisions) != 2 || short.Revisions[1].Revision != 4 {
		t.Errorf("log --max-count 2: %d revisions", len(short.Revisions))
	}
	tool(0, "diff", "app", "2", "5")

	records := revisionRecords(t, c, ns)
	if len(records) != 4 {
		t.Errorf("%d revision records, want 4 (revisions 1 to 4, the tool's)", len(records))
	}
	for name, data := range records {
		noCanary(t, "record "+name, data, secretCanaries(pw1, pw2, pw5))
	}
	noCanary(t, "the tool's outputs", outputs.String(), secretCanaries(pw1, pw2, pw5))

	// Helm keeps 3 revisions after this upgrade (4, 5, 6): the records of
	// 1 to 3 go with them.
	tool(0, "app", logChart(t, "6.0.0", "2Gi", "nginx:1.26", "d", pw5, nil), "--history-max", "3")
	records = revisionRecords(t, c, ns)
	var names []string
	for name := range records {
		names = append(names, name)
	}
	sort.Strings(names)
	if want := []string{"safe-upgrade.revision.app.v4", "safe-upgrade.revision.app.v6"}; !slices.Equal(names, want) {
		t.Errorf("records after --history-max 3: %v, want %v", names, want)
	}

	// A rollback is recorded as one, with the revision it went back to.
	tool(0, "rollback", "app", "5", "--ack-all-destructive")
	doc, lr = readLog(t, c, "app", "-n", ns, "--max-count", "1")
	outputs.WriteString(lr.Stdout + lr.Stderr)
	if rb := doc.Revisions[0]; rb.Revision != 7 || rb.Operation != "rollback" || rb.Computed || rb.Summary["inPlace"] != 1 || rb.By == nil {
		t.Errorf("revision 7 (rollback to 5): %+v; want the tool's record of a rollback changing the ConfigMap in place", rb)
	}
	saysAll(t, "log of the rollback", tool(0, "log", "app", "--max-count", "1").Stdout, "revision 7 (rollback to revision 5, deployed)")

	// The uninstall that keeps the history is the last revision's event.
	tool(0, "uninstall", "app", "--keep-history", "--ack-all-destructive")
	doc, lr = readLog(t, c, "app", "-n", ns, "--max-count", "1")
	outputs.WriteString(lr.Stdout + lr.Stderr)
	if last := doc.Revisions[0]; last.Revision != 7 || last.Status != "uninstalled" || len(last.Events) != 1 || last.Events[0].Kind != "uninstall" || last.Computed {
		t.Errorf("after uninstall --keep-history, revision 7: %+v; want uninstalled, its record with the uninstall", last)
	}
	noCanary(t, "the tool's outputs", outputs.String(), secretCanaries(pw1, pw2, pw5))
}
