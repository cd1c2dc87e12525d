package e2e

import (
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/shimtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// withJob turns on the demo chart's migration Job, whose selector and pod
// template labels the API server generates.
var withJob = []string{"--set", "migrate.enabled=true"}

// forceRelease installs the demo chart with its Job through helm (v3, or
// v4 with extra flags), its claim bound in advance so its pod runs, and
// returns the namespace and the demo-v2 chart (the claim template grows: an
// immutable change; the web image moves: rolling).
func forceRelease(t *testing.T, c *testcluster.Cluster, helm4 bool, installFlags ...string) (string, string) {
	t.Helper()
	ns := c.Namespace(t)
	boundVolumes(t, c, ns, "data-demo-db-0")
	args := append([]string{"install", "demo", shimtest.Chart(c, "demo"), "-n", ns}, append(withJob, installFlags...)...)
	if helm4 {
		c.HelmV4(t, args...)
	} else {
		c.Helm(t, args...)
	}
	shimtest.WaitForDB(t, c, ns)
	return ns, shimtest.Chart(c, "demo-v2")
}

// upgradeArgs are the tool's arguments for the demo release's upgrade to
// chart in ns, with the Job, plus more.
func upgradeArgs(ns, chart string, more ...string) []string {
	return append(append([]string{"demo", chart, "-n", ns}, withJob...), more...)
}

// TestForcePlannedAsHelmReplaces (issue 39): with --force Helm 3 replaces
// every object of the new render that exists with a PUT, changed or not,
// and a PUT without the Job's generated selector is refused. The plan asks
// the server the same PUT: the unchanged Job is invalid with the server's
// field path and blocks (exit 2); the StatefulSet whose claim template
// changes stays recreate-required (acknowledged, it is deleted and Helm
// creates it: no PUT); the Services PUT cleanly. Applying with --force and
// the acknowledgement writes nothing. Without --force the same upgrade
// plans and applies as before: the Job unchanged, the StatefulSet
// recreated around its pods and claims. And real `helm upgrade --force`
// fails on the Job's PUT as the plan said.
func TestForcePlannedAsHelmReplaces(t *testing.T) {
	c := testcluster.Get(t)
	ns, v2 := forceRelease(t, c, false)
	ack := "StatefulSet/" + ns + "/demo-db"
	// Another manager's annotation, which a patch keeps and a PUT drops.
	mustBin(t, c, c.Kubectl, "annotate", "-n", ns, "service", "demo-web", "other.example/owner=ops")

	p, r := planJSON(t, c, upgradeArgs(ns, v2, "--force")...)
	if r.Code != 2 {
		t.Fatalf("--force --dry-run: exit %d, want 2 (blocked by the Job's PUT)\n%s", r.Code, r.Stderr)
	}
	checkJobRefused(t, p.change(t, "Job", "demo-migrate"))
	if sts := p.change(t, "StatefulSet", "demo-db"); sts.Class != "recreate-required" || sts.Blocking {
		t.Errorf("StatefulSet under --force: class %s blocking %v, want recreate-required, not blocking (the acknowledged recreate creates it)", sts.Class, sts.Blocking)
	}
	if svc := p.change(t, "Service", "demo-db"); svc.Action != "noop" {
		t.Errorf("headless Service: the PUT changes nothing, want a noop: %+v", svc)
	}
	// The server keeps the cluster IP the render leaves out; the PUT drops
	// the annotation.
	if svc := p.change(t, "Service", "demo-web"); svc.Class != "in-place" || svc.Blocking || len(svc.Reasons) != 1 ||
		svc.Reasons[0].Path != "metadata.annotations[other.example/owner]" || !strings.Contains(svc.Reasons[0].Message, "--force PUT removes it") {
		t.Errorf("Service demo-web: want in-place, the annotation the PUT drops as the only reason: %+v", svc)
	}
	r = run(t, c, upgradeArgs(ns, v2, "--force")...)
	if !strings.Contains(r.Stdout, "--force: Helm replaces every existing object with PUT") {
		t.Errorf("the report does not say what --force does:\n%s", r.Stdout)
	}

	// Applied with --force and the StatefulSet acknowledged: blocked by the
	// Job before anything is written (the StatefulSet is not deleted).
	before, events := shimtest.DemoState(t, c, ns, "demo"), len(c.AuditEvents(t, nil))
	r = run(t, c, upgradeArgs(ns, v2, "--force", "--ack", ack)...)
	if r.Code != 2 || !strings.Contains(r.Stderr, "demo-migrate") {
		t.Fatalf("--force --ack: exit %d, want 2 naming the Job\n%s", r.Code, r.Stderr)
	}
	shimtest.CheckUnwritten(t, c, ns, "--force blocked on the Job", before, events)

	// Without --force: as before.
	p, r = planJSON(t, c, upgradeArgs(ns, v2, "--ack", ack)...)
	if r.Code != 0 || p.change(t, "Job", "demo-migrate").Action != "noop" || p.change(t, "StatefulSet", "demo-db").Class != "recreate-required" ||
		p.change(t, "Service", "demo-web").Action != "noop" {
		t.Fatalf("without --force: exit %d, want 0, the Job and the Service noops and the StatefulSet recreate-required\n%s", r.Code, r.Stderr)
	}
	pods, claims := shimtest.WaitForDB(t, c, ns)
	if r = run(t, c, upgradeArgs(ns, v2, "--ack", ack)...); r.Code != 0 {
		t.Fatalf("without --force, acknowledged: exit %d\n%s", r.Code, r.Stderr)
	}
	shimtest.CheckSameUIDs(t, c, ns, pods, claims)

	// Real helm upgrade --force fails on the Job's PUT, as planned.
	p, r = planJSON(t, c, upgradeArgs(ns, v2, "--force")...)
	if r.Code != 2 {
		t.Fatalf("--force --dry-run after the upgrade: exit %d, want 2\n%s", r.Code, r.Stderr)
	}
	checkJobRefused(t, p.change(t, "Job", "demo-migrate"))
	out, err := c.HelmErr(append([]string{"upgrade", "demo", v2, "-n", ns, "--force"}, withJob...)...)
	if err == nil || !strings.Contains(out, "demo-migrate") || !strings.Contains(out, "spec.selector") {
		t.Errorf("helm upgrade --force: want it to fail on the Job's spec.selector, got %v\n%s", err, out)
	}
}

// checkJobRefused checks the verdict of the demo chart's Job under --force:
// invalid and blocking, with the server's path and message.
func checkJobRefused(t *testing.T, job jsonChange) {
	t.Helper()
	if job.Action != "update" || job.Class != "invalid" || !job.Blocking || job.Prediction != "server" {
		t.Fatalf("Job under --force: action %s class %s blocking %v prediction %s, want an invalid update from the server's answer\n%+v",
			job.Action, job.Class, job.Blocking, job.Prediction, job)
	}
	found := false
	for _, r := range job.Reasons {
		if r.Path == "spec.selector" && strings.Contains(r.Message, "Required value") && strings.Contains(r.Message, "--force") && r.Source == "server" {
			found = true
		}
	}
	if !found {
		t.Errorf("Job's reasons %+v, want spec.selector: Required value from the server, saying it is --force's PUT", job.Reasons)
	}
}

// TestForceReplaceHelm4: Helm 4's --force-replace is planned the same way
// on a release Helm 4 applies client-side (--server-side=false); on one it
// applies server-side Helm 4 refuses it, and so does the plan (exit 2,
// nothing replaced).
func TestForceReplaceHelm4(t *testing.T) {
	c := testcluster.Get(t)
	t.Run("client-side", func(t *testing.T) {
		ns, v2 := forceRelease(t, c, true, "--server-side=false")
		p, r := planJSON(t, c, upgradeArgs(ns, v2, "--force-replace", "--ack", "StatefulSet/"+ns+"/demo-db")...)
		if r.Code != 2 || p.Release.ApplyMethod != "csa" {
			t.Fatalf("--force-replace on a client-side Helm 4 release: exit %d apply method %q, want 2 and csa\n%s", r.Code, p.Release.ApplyMethod, r.Stderr)
		}
		checkJobRefused(t, p.change(t, "Job", "demo-migrate"))
	})
	t.Run("server-side", func(t *testing.T) {
		ns, v2 := forceRelease(t, c, true)
		before := len(c.AuditEvents(t, nil))
		p, r := planJSON(t, c, upgradeArgs(ns, v2, "--force-replace", "--ack", "StatefulSet/"+ns+"/demo-db")...)
		if r.Code != 2 || p.Release.ApplyMethod != "ssa" || !strings.Contains(r.Stderr, "Helm 4 refuses to replace objects with PUT in a server-side apply") {
			t.Fatalf("--force-replace on a server-side release: exit %d apply method %q, want 2, ssa and the blocker\n%s", r.Code, p.Release.ApplyMethod, r.Stderr)
		}
		for _, e := range c.AuditEvents(t, nil)[before:] {
			if strings.HasPrefix(e.UserAgent, "helm-safe-upgrade/") && e.Verb == "update" && e.ObjectRef.Namespace == ns && e.ObjectRef.Resource != "leases" {
				t.Errorf("a server-side plan sent a PUT: %s", e.RequestURI)
			}
		}
	})
}

// TestForceWithSafeRecreate: --force with an acknowledged recreate-required
// StatefulSet, on the demo chart without the Job (every other PUT
// accepted): the tool deletes the StatefulSet (orphan) before Helm runs,
// so Helm creates it instead of replacing it, and PUTs every other object
// (unchanged ones too). The release is deployed, the pods and claims keep
// their UIDs.
func TestForceWithSafeRecreate(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	boundVolumes(t, c, ns, "data-demo-db-0")
	c.Helm(t, "install", "demo", shimtest.Chart(c, "demo"), "-n", ns)
	pods, claims := shimtest.WaitForDB(t, c, ns)
	events := len(c.AuditEvents(t, nil))
	r := run(t, c, "demo", shimtest.Chart(c, "demo-v2"), "-n", ns, "--force", "--ack", "StatefulSet/"+ns+"/demo-db")
	if r.Code != 0 || !strings.Contains(r.Stdout+r.Stderr, "status deployed") {
		t.Fatalf("--force --ack: exit %d, want 0 and revision 2 deployed\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	shimtest.CheckSameUIDs(t, c, ns, pods, claims)
	// In order: the StatefulSet deleted, then created (no PUT of it); the
	// unchanged ConfigMap replaced all the same.
	var order []string
	for _, e := range toolWrites(t, c, ns, events) {
		w := e.Verb + " " + e.ObjectRef.Resource
		// A dry-run delete carries dryRun in its body: the same line twice.
		if (e.ObjectRef.Name == "demo-db" && e.ObjectRef.Resource == "statefulsets" || e.ObjectRef.Name == "demo-config") &&
			(len(order) == 0 || order[len(order)-1] != w) {
			order = append(order, w)
		}
	}
	if got := strings.Join(order, ", "); got != "delete statefulsets, create statefulsets, update configmaps" &&
		got != "delete statefulsets, update configmaps, create statefulsets" {
		t.Errorf("writes of the StatefulSet and the ConfigMap: %s; want the StatefulSet deleted then created, never replaced, and the ConfigMap replaced", got)
	}
}
