package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/helmtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// bin runs a helm v4 or kubectl binary with the cluster's environment and
// returns its combined output and error.
func bin(t testing.TB, c *testcluster.Cluster, path string, args ...string) (string, error) {
	ctx, cancel := testcluster.CommandContext(t)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = c.Env()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustBin(t *testing.T, c *testcluster.Cluster, path string, args ...string) string {
	t.Helper()
	out, err := bin(t, c, path, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(path), strings.Join(args, " "), err, out)
	}
	return out
}

// conflictChart is issue 12's chart: a ConfigMap whose data.key is "a" and
// whose data.other comes from --set other=.
const conflictTemplate = `apiVersion: v1
kind: ConfigMap
metadata: {name: r-cm}
data:
  key: a
  other: {{ .Values.other | default "x" | quote }}
`

// handEdit makes field manager someone-else take data.key of r-cm in ns,
// as issue 12's kubectl apply --server-side does.
func handEdit(t *testing.T, c *testcluster.Cluster, ns string) {
	t.Helper()
	edit := filepath.Join(t.TempDir(), "edit.yaml")
	if err := os.WriteFile(edit, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: r-cm, namespace: "+ns+"}\ndata: {key: hand-edited}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustBin(t, c, c.Kubectl, "apply", "--server-side", "--field-manager=someone-else", "--force-conflicts", "-f", edit)
}

// rcm returns r-cm's data and its managed fields (helmtest.ManagedFields).
func rcm(t *testing.T, c *testcluster.Cluster, ns string) (map[string]string, []string) {
	t.Helper()
	cm, err := c.Clientset(t).CoreV1().ConfigMaps(ns).Get(t.Context(), "r-cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data, helmtest.ManagedFields(cm.ManagedFields)
}

// sameDocuments compares two release manifests document by document,
// without the whitespace around each: the tool stores the reviewed manifest
// as Helm 3 renders it, and Helm 4 keeps a template's trailing newline
// where Helm 3 trims it ("...\n\n" against "...\n"), a difference of
// rendering, not of what is applied.
func sameDocuments(a, b string) bool {
	docs := func(m string) []string {
		var out []string
		for _, d := range strings.Split(m, "\n---\n") {
			out = append(out, strings.TrimSpace(strings.TrimPrefix(d, "---\n")))
		}
		return out
	}
	return strings.Join(docs(a), "\x00") == strings.Join(docs(b), "\x00")
}

// twins installs release r of the conflict chart with the helm binary
// helm names (c.Helm3 or c.Helm4) in two namespaces, ns for the tool and
// twin for helm, and runs setup (if any) on each.
func twins(t *testing.T, helm func(*testcluster.Cluster) string, setup func(*testing.T, *testcluster.Cluster, string)) (c *testcluster.Cluster, ns, twin, chart string) {
	t.Helper()
	c = testcluster.Get(t)
	ns, twin = c.Namespace(t), c.Namespace(t)
	chart = writeChart(t, "r", "1.0.0", map[string]string{"cm.yaml": conflictTemplate})
	for _, n := range []string{ns, twin} {
		mustBin(t, c, helm(c), "install", "r", chart, "-n", n)
		if setup != nil {
			setup(t, c, n)
		}
	}
	return c, ns, twin, chart
}

// assertTwins checks that revision version of release r is the same in ns
// (applied by the tool) as in twin (applied by helm v4.3.1): apply method
// ssa, status, manifest (see sameDocuments), and r-cm's data and managed fields (so no Update
// entry of the tool's where Helm 4 leaves none).
func assertTwins(t *testing.T, c *testcluster.Cluster, ns, twin string, version int) {
	t.Helper()
	cs := c.Clientset(t)
	got, want := helmtest.ReadRecord(t, cs, ns, "r", version), helmtest.ReadRecord(t, cs, twin, "r", version)
	if got.ApplyMethod != "ssa" || got.ApplyMethod != want.ApplyMethod || got.Info.Status != want.Info.Status || !sameDocuments(got.Manifest, want.Manifest) {
		t.Errorf("revision %d: tool's apply_method %q status %s, helm4's %q %s; manifests:\ntool:\n%q\nhelm4:\n%q",
			version, got.ApplyMethod, got.Info.Status, want.ApplyMethod, want.Info.Status, got.Manifest, want.Manifest)
	}
	gotData, gotFields := rcm(t, c, ns)
	wantData, wantFields := rcm(t, c, twin)
	if fmt.Sprint(gotData) != fmt.Sprint(wantData) {
		t.Errorf("r-cm data: tool %v, helm4 %v", gotData, wantData)
	}
	if strings.Join(gotFields, "\n") != strings.Join(wantFields, "\n") {
		t.Errorf("r-cm managed fields:\ntool:\n%s\nhelm4:\n%s", strings.Join(gotFields, "\n"), strings.Join(wantFields, "\n"))
	}
}

// TestHelm4Conflict is issue 12's "done when": a Helm 4 release whose
// data.key another field manager took. The plan shows the conflict on
// data.key with its owner and blocks, unackable, as the real helm4 upgrade
// fails; with --force-conflicts the change is acknowledgeable, and the
// acknowledged apply leaves the same object, managed fields and release
// record as helm4 upgrade --force-conflicts on an identical twin release.
func TestHelm4Conflict(t *testing.T) {
	t.Parallel()
	c, ns, twin, chart := twins(t, func(c *testcluster.Cluster) string { return c.Helm4 }, handEdit)

	before := auditMark(t, c)
	p, r := planJSON(t, c, "r", chart, "-n", ns, "--set", "other=y")
	if p.Release.ApplyMethod != "ssa" {
		t.Errorf("release applyMethod %q, want ssa (read from the Helm 4 record)", p.Release.ApplyMethod)
	}
	got := p.change(t, "ConfigMap", "r-cm")
	if r.Code != 2 || got.Class != "invalid" || !got.Destructive || !got.Blocking {
		t.Fatalf("plan: exit %d, class %s destructive %v blocking %v; want 2, invalid, blocking\n%+v\n%s", r.Code, got.Class, got.Destructive, got.Blocking, got.Reasons, r.Stderr)
	}
	if len(got.Reasons) == 0 || got.Reasons[0].Path != "data.key" || got.Reasons[0].Manager != "someone-else" ||
		!strings.Contains(got.Reasons[0].Message, "--force-conflicts") {
		t.Errorf("reasons %+v, want the conflict on data.key owned by someone-else, saying what --force-conflicts does", got.Reasons)
	}
	assertOnlyDryRunWrites(t, c, ns, before)
	text := run(t, c, "r", chart, "-n", ns, "--set", "other=y", "--dry-run")
	if text.Code != 2 || !strings.Contains(text.Stdout, "server-side apply (Helm 4)") || !strings.Contains(text.Stdout, `conflict with field manager "someone-else"`) {
		t.Errorf("text report: exit %d, want 2, the apply method and the conflict:\n%s\n%s", text.Code, text.Stdout, text.Stderr)
	}
	t.Logf("text report:\n%s%s", text.Stdout, text.Stderr)
	// Not ackable: an acknowledgement does not let it through, and the
	// apply writes nothing.
	before = auditMark(t, c)
	if r := run(t, c, "r", chart, "-n", ns, "--set", "other=y", "--ack", "ConfigMap/"+ns+"/r-cm"); r.Code != 2 {
		t.Errorf("acknowledged conflict: exit %d, want 2 (blocking)\n%s", r.Code, r.Stderr)
	}
	assertOnlyDryRunWrites(t, c, ns, before)

	// The truth: helm v4.3.1 fails on the conflict (in both, so that the
	// twins keep the same history: revision 2 failed).
	for _, n := range []string{ns, twin} {
		out, err := bin(t, c, c.Helm4, "upgrade", "r", chart, "-n", n, "--set", "other=y")
		if err == nil || !strings.Contains(out, `conflict with "someone-else": .data.key`) {
			t.Errorf("helm4 upgrade: %v, want the conflict on .data.key\n%s", err, out)
		}
	}

	// With --force-conflicts: destructive, acknowledgeable.
	p, r = planJSON(t, c, "r", chart, "-n", ns, "--set", "other=y", "--force-conflicts")
	got = p.change(t, "ConfigMap", "r-cm")
	if r.Code != 2 || got.Class != "in-place" || !got.Destructive || got.Blocking || got.Reasons[0].Manager != "someone-else" {
		t.Fatalf("--force-conflicts: exit %d, class %s destructive %v blocking %v reasons %+v; want 2, in-place, destructive, not blocking",
			r.Code, got.Class, got.Destructive, got.Blocking, got.Reasons)
	}
	ack := "ConfigMap/" + ns + "/r-cm@" + got.Fingerprint
	if _, r := planJSON(t, c, "r", chart, "-n", ns, "--set", "other=y", "--force-conflicts", "--ack", ack); r.Code != 0 {
		t.Errorf("--force-conflicts --ack: exit %d, want 0\n%s", r.Code, r.Stderr)
	}

	// The acknowledged apply, and the twin upgraded by helm4.
	r = run(t, c, "r", chart, "-n", ns, "--set", "other=y", "--force-conflicts", "--ack", ack)
	if r.Code != 0 || !strings.Contains(r.Stdout+r.Stderr, "revision 3, status deployed") {
		t.Fatalf("apply with --force-conflicts: exit %d, want 0 and revision 3 deployed\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	mustBin(t, c, c.Helm4, "upgrade", "r", chart, "-n", twin, "--set", "other=y", "--force-conflicts")
	assertTwins(t, c, ns, twin, 3)
	if data, _ := rcm(t, c, ns); data["key"] != "a" || data["other"] != "y" {
		t.Errorf("after the apply data = %v, want key a (taken back from someone-else), other y", data)
	}
}

// TestHelm4ApplyNoConflict: a revision the tool applies to a Helm 4 release
// is Helm 4's: managed fields helm/Apply only (no Update entry), the record
// says apply_method ssa, the same as its twin upgraded by helm4; and a
// following plain helm4 upgrade succeeds with no conflict.
func TestHelm4ApplyNoConflict(t *testing.T) {
	t.Parallel()
	c, ns, twin, chart := twins(t, func(c *testcluster.Cluster) string { return c.Helm4 }, nil)
	r := run(t, c, "r", chart, "-n", ns, "--set", "other=y")
	if r.Code != 0 {
		t.Fatalf("apply: exit %d, want 0\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	mustBin(t, c, c.Helm4, "upgrade", "r", chart, "-n", twin, "--set", "other=y")
	assertTwins(t, c, ns, twin, 2)
	if _, fields := rcm(t, c, ns); len(fields) != 1 || !strings.HasPrefix(fields[0], "helm Apply ") {
		t.Errorf("managed fields %q, want one entry: helm Apply", fields)
	}
	mustBin(t, c, c.Helm4, "upgrade", "r", chart, "-n", ns, "--set", "other=z")
	if data, _ := rcm(t, c, ns); data["other"] != "z" {
		t.Errorf("after helm4 upgrade data = %v, want other z", data)
	}
}

// ssaDiffers are the rows of the verdict table where a Helm 4 (ssa) release
// truly gets another verdict, with why.
var ssaDiffers = map[string]struct {
	class       string
	destructive bool
	path        string // a reason path it must give
	why         string
}{
	// kubectl scale (the scale subresource) makes another field manager own
	// spec.replicas; Helm 4's apply of replicas: 2 conflicts with it and the
	// upgrade fails, where Helm 3's patch silently reverts the drift.
	"drift reverted": {class: "invalid", destructive: true, path: "spec.replicas", why: "spec.replicas is owned by the scaler: Helm 4's apply conflicts"},
}

// TestPlanVerdictsHelm4 runs the verdict table on Helm 4 (ssa) releases of
// the same charts: installed with helm v4.3.1, planned with the server-side
// dry-run apply. Each row must give the class it gives for Helm 3, except
// the rows of ssaDiffers, where the real helm4 upgrade confirms the
// difference.
func TestPlanVerdictsHelm4(t *testing.T) {
	c := testcluster.Get(t)
	forEachPlanCase(t, c, func(t *testing.T, tc planCase, ns string) {
		mustBin(t, c, c.Helm4, "install", "app", writeChart(t, "app", "1.0.0", otherIPs(tc.v1)), "-n", ns)
		if tc.setup != nil {
			tc.setup(t, c, ns)
		}
		class, destructive := tc.class, tc.destructive
		differs, ok := ssaDiffers[tc.name]
		if ok {
			class, destructive = differs.class, differs.destructive
		}
		v2 := writeChart(t, "app", "2.0.0", otherIPs(tc.v2))
		before := auditMark(t, c)
		p, r := planJSON(t, c, "app", v2, "-n", ns)
		if p.Release.ApplyMethod != "ssa" {
			t.Errorf("applyMethod %q, want ssa", p.Release.ApplyMethod)
		}
		got := p.change(t, tc.kind, tc.object)
		if got.Action != tc.action || got.Class != class || got.Destructive != destructive {
			t.Fatalf("%s/%s: got action=%s class=%s destructive=%v, want %s %s %v\nreasons: %+v\nstderr:\n%s",
				tc.kind, tc.object, got.Action, got.Class, got.Destructive, tc.action, class, destructive, got.Reasons, r.Stderr)
		}
		if ok && !hasPathPrefix(got.paths(), differs.path) {
			t.Errorf("reason paths %q, want %s (reasons %+v)", got.paths(), differs.path, got.Reasons)
		}
		if !ok {
			for _, want := range tc.paths {
				if !hasPathPrefix(got.paths(), want) {
					t.Errorf("reason paths %q: none starts with %q (reasons %+v)", got.paths(), want, got.Reasons)
				}
			}
		}
		wantCode := 0
		if destructive {
			wantCode = 2
		}
		if r.Code != wantCode {
			t.Errorf("exit code %d, want %d\nstderr:\n%s", r.Code, wantCode, r.Stderr)
		}
		assertOnlyDryRunWrites(t, c, ns, before)
		if ok {
			out, err := bin(t, c, c.Helm4, "upgrade", "app", v2, "-n", ns)
			if err == nil {
				t.Errorf("%s: the plan says %s, but helm4 upgrade succeeded:\n%s", differs.why, class, out)
			}
			t.Logf("SSA differs (%s); helm4 upgrade: %s", differs.why, strings.TrimSpace(out))
		}
	})
}

// otherIPs moves the fixed cluster IPs of the table's Service rows to
// another block, so that the Helm 3 and Helm 4 tables can run side by side
// on one cluster.
func otherIPs(templates map[string]string) map[string]string {
	out := make(map[string]string, len(templates))
	for f, content := range templates {
		out[f] = strings.ReplaceAll(content, "10.96.200.", "10.96.201.")
	}
	return out
}

// TestHelm3ReleaseToServerSide: --server-side=true on a release Helm 3
// installed. Helm 4 hands Helm's client-side fields to its apply first, so
// changing a field Helm's patch owned is no conflict: the plan is a plain
// in-place update, and the tool's apply leaves the same record, object and
// managed fields as helm4 upgrade --server-side=true on a twin. Under auto
// the same release is planned client-side.
func TestHelm3ReleaseToServerSide(t *testing.T) {
	t.Parallel()
	c, ns, twin, chart := twins(t, func(c *testcluster.Cluster) string { return c.Helm3 }, nil)

	p, r := planJSON(t, c, "r", chart, "-n", ns, "--set", "other=y")
	if p.Release.ApplyMethod != "csa" || r.Code != 0 {
		t.Errorf("auto on a Helm 3 release: applyMethod %q exit %d, want csa and 0\n%s", p.Release.ApplyMethod, r.Code, r.Stderr)
	}
	p, r = planJSON(t, c, "r", chart, "-n", ns, "--set", "other=y", "--server-side=true")
	got := p.change(t, "ConfigMap", "r-cm")
	if p.Release.ApplyMethod != "ssa" || r.Code != 0 || got.Class != "in-place" || got.Destructive || !hasPathPrefix(got.paths(), "data.other") {
		t.Fatalf("--server-side=true: applyMethod %q exit %d class %s destructive %v reasons %+v; want ssa, 0, in-place on data.other\n%s",
			p.Release.ApplyMethod, r.Code, got.Class, got.Destructive, got.Reasons, r.Stderr)
	}
	if r := run(t, c, "r", chart, "-n", ns, "--set", "other=y", "--server-side=true"); r.Code != 0 {
		t.Fatalf("apply --server-side=true: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	mustBin(t, c, c.Helm4, "upgrade", "r", chart, "-n", twin, "--set", "other=y", "--server-side=true")
	assertTwins(t, c, ns, twin, 2)
	// The release stays server-side: auto now plans and applies ssa.
	if p, r := planJSON(t, c, "r", chart, "-n", ns, "--set", "other=z"); p.Release.ApplyMethod != "ssa" || r.Code != 0 {
		t.Errorf("after the move, auto: applyMethod %q exit %d, want ssa and 0\n%s", p.Release.ApplyMethod, r.Code, r.Stderr)
	}
}

// TestHelm4InstallServerSide: --install --server-side=true installs with
// Helm 4's action, as helm4 install does (server-side by default): the same
// record, object and managed fields as a twin helm4 installed; a plain
// helm4 upgrade follows without conflict. Under auto the tool installs as
// Helm 3 does (no apply_method).
func TestHelm4InstallServerSide(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	ns, twin, auto := c.Namespace(t), c.Namespace(t), c.Namespace(t)
	chart := writeChart(t, "r", "1.0.0", map[string]string{"cm.yaml": conflictTemplate})
	if r := run(t, c, "r", chart, "-n", ns, "--install", "--server-side=true"); r.Code != 0 {
		t.Fatalf("install --server-side=true: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	mustBin(t, c, c.Helm4, "install", "r", chart, "-n", twin)
	assertTwins(t, c, ns, twin, 1)
	mustBin(t, c, c.Helm4, "upgrade", "r", chart, "-n", ns, "--set", "other=z")

	if r := run(t, c, "r", chart, "-n", auto, "--install"); r.Code != 0 {
		t.Fatalf("install: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if rec := helmtest.ReadRecord(t, c.Clientset(t), auto, "r", 1); rec.ApplyMethod != "" {
		t.Errorf("install under auto: apply_method %q, want none (Helm 3's install)", rec.ApplyMethod)
	}
}

// TestHelm4Create: a Helm 4 release creates new objects with server-side
// apply and strict field validation: a new object with an unknown field is
// a blocking create, as helm4 upgrade fails on it; a valid one is a create.
func TestHelm4Create(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	mustBin(t, c, c.Helm4, "install", "r", writeChart(t, "r", "1.0.0", map[string]string{"cm.yaml": conflictTemplate}), "-n", ns)
	extra := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: r-new}\ndata: {k: v}\n"
	good := writeChart(t, "r", "2.0.0", map[string]string{"cm.yaml": conflictTemplate, "new.yaml": extra})
	p, r := planJSON(t, c, "r", good, "-n", ns)
	if got := p.change(t, "ConfigMap", "r-new"); got.Action != "create" || got.Destructive || r.Code != 0 {
		t.Errorf("valid new object: %s destructive %v exit %d, want a create and 0\n%s", got.Action, got.Destructive, r.Code, r.Stderr)
	}
	bad := writeChart(t, "r", "3.0.0", map[string]string{"cm.yaml": conflictTemplate, "new.yaml": extra + "unknownField: x\n"})
	p, r = planJSON(t, c, "r", bad, "-n", ns)
	if got := p.change(t, "ConfigMap", "r-new"); !got.Blocking || r.Code != 2 || len(got.Reasons) == 0 || !strings.Contains(got.Reasons[0].Message, "unknownField") {
		t.Errorf("unknown field in a new object: blocking %v exit %d reasons %+v notes %q, want blocking, 2, naming the field\n%s", got.Blocking, r.Code, got.Reasons, got.Notes, r.Stderr)
	}
	if out, err := bin(t, c, c.Helm4, "upgrade", "r", bad, "-n", ns); err == nil {
		t.Errorf("helm4 upgrade with an unknown field succeeded, the plan blocks it:\n%s", out)
	}
}
