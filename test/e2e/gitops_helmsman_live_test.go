package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/chartrepo"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/filetree"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestGitOpsLiveHelmsman: a Helmsman desired state whose app helm
// installed is planned with --live against the release stored in the
// cluster. The chart bump's claim-template change comes back from the API
// server's dry-run as recreate-required (exit 2); a namespace move is the
// live uninstall of the stored release (its StatefulSet a data-loss
// delete, the claim its controller made named as left behind) and an
// install into the new namespace. Nothing is written.
func TestGitOpsLiveHelmsman(t *testing.T) {
	c := testcluster.Get(t)
	ns, moved := c.Namespace(t), c.Namespace(t)
	demo := filepath.Join(c.Root, "testdata/charts/demo")
	url, _ := chartrepo.Serve(t, demo, filepath.Join(c.Root, "testdata/charts/demo-v2"))
	c.Helm(t, "install", "shop", demo, "-n", ns)
	testcluster.Eventually(t, "the StatefulSet controller made its claim", func() (bool, string) {
		out, err := kubectlErr(t, c, "get", "pvc", "-n", ns, "data-shop-db-0", "-o", "name")
		return err == nil, out
	})
	dsf := func(version, namespace string) string {
		return filetree.Write(t, map[string]string{"helmsman.yaml": "helmRepos:\n  charts: \"" + url + "\"\n" +
			"namespaces:\n  " + ns + ": {}\n  " + moved + ": {}\n" +
			"apps:\n  shop:\n    namespace: " + namespace + "\n    enabled: true\n    chart: charts/demo\n    version: \"" + version + "\"\n"})
	}
	plans := func(res result) []json.RawMessage {
		t.Helper()
		var doc struct {
			Releases []struct{ Plan json.RawMessage }
		}
		if err := json.Unmarshal([]byte(res.Stdout), &doc); err != nil {
			t.Fatalf("%v\n%s\n%s", err, res.Stderr, res.Stdout)
		}
		out := make([]json.RawMessage, len(doc.Releases))
		for i, r := range doc.Releases {
			out[i] = r.Plan
		}
		return out
	}
	change := func(raw json.RawMessage, kind string) (jsonPlan, jsonChange, string) {
		t.Helper()
		var p jsonPlan
		var n struct{ Notes []string }
		if err := json.Unmarshal(raw, &p); err != nil || json.Unmarshal(raw, &n) != nil {
			t.Fatalf("%v\n%s", err, raw)
		}
		for _, ch := range p.Changes {
			if ch.Kind == kind {
				return p, ch, strings.Join(n.Notes, "\n")
			}
		}
		t.Fatalf("no %s in the plan:\n%s", kind, raw)
		return p, jsonChange{}, ""
	}

	res := run(t, c, "gitops", dsf("1.0.0", ns), dsf("2.0.0", ns), "--live", "-o", "json")
	if res.Code != 2 {
		t.Fatalf("chart bump: exit %d, want 2 (blocked)\n%s\n%s", res.Code, res.Stderr, res.Stdout)
	}
	ps := plans(res)
	if len(ps) != 1 {
		t.Fatalf("chart bump: %d plans, want the upgrade alone\n%s", len(ps), res.Stdout)
	}
	p, sts, notes := change(ps[0], "StatefulSet")
	if p.Release.Operation != "upgrade" || p.Release.Namespace != ns || !strings.Contains(notes, "--live: planned against release shop as stored in namespace "+ns) {
		t.Errorf("release %+v, notes:\n%s\nwant the upgrade of the stored release, said to be planned live", p.Release, notes)
	}
	if sts.Class != "recreate-required" || !sts.Destructive || len(sts.Reasons) == 0 || sts.Reasons[0].Source != "server" {
		t.Errorf("StatefulSet %s: %s destructive %v reasons %+v, want recreate-required from the server's dry-run", sts.Name, sts.Class, sts.Destructive, sts.Reasons)
	}

	res = run(t, c, "gitops", dsf("1.0.0", ns), dsf("1.0.0", moved), "--live", "-o", "json")
	if res.Code != 2 {
		t.Fatalf("namespace move: exit %d, want 2 (blocked)\n%s\n%s", res.Code, res.Stderr, res.Stdout)
	}
	ps = plans(res)
	if len(ps) != 2 {
		t.Fatalf("namespace move: %d plans, want the uninstall and the install\n%s", len(ps), res.Stdout)
	}
	un, del, unNotes := change(ps[0], "StatefulSet")
	if un.Release.Operation != "uninstall" || un.Release.Namespace != ns || del.Action != "delete" || del.Class != "data-loss" {
		t.Errorf("uninstall: release %+v, StatefulSet %s %s, want the stored release's data-loss delete", un.Release, del.Action, del.Class)
	}
	// The claim the StatefulSet controller made, read from the cluster.
	if !strings.Contains(unNotes, "left in the cluster: PersistentVolumeClaim/"+ns+"/data-shop-db-0") {
		t.Errorf("uninstall notes do not name the live claim left behind:\n%s", unNotes)
	}
	in, create, _ := change(ps[1], "StatefulSet")
	if in.Release.Operation != "install" || in.Release.Namespace != moved || create.Action != "create" {
		t.Errorf("install: release %+v, StatefulSet %s, want its install into %s", in.Release, create.Action, moved)
	}
	if got := mustBin(t, c, c.Helm3, "status", "shop", "-n", ns, "-o", "json"); !strings.Contains(got, `"status":"deployed"`) {
		t.Errorf("the plan changed the release:\n%s", got)
	}
}
