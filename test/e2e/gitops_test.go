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

// TestGitOpsLive: a release installed by the real helm under the name
// helm-controller gives a HelmRelease (its name, in its namespace) is
// planned with --live three-way from the HelmRelease's chart upgrade: the
// StatefulSet's claim template change comes back from the API server
// (source: server, not the offline catalogue) as recreate-required, and
// blocks. The Application of the same pull request, of which nothing is
// live, is planned against the cluster too (see gitops_live_test.go).
func TestGitOpsLive(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	demo := filepath.Join(c.Root, "testdata/charts/demo")
	web := chartrepo.WebChart(t)
	url, _ := chartrepo.Serve(t, demo, filepath.Join(c.Root, "testdata/charts/demo-v2"), web)
	c.Helm(t, "install", "shop", demo, "-n", ns)

	side := func(version, tag string) string {
		return filetree.Write(t, map[string]string{
			"source.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: charts, namespace: " + ns + "}\nspec: {url: \"" + url + "\"}\n",
			"shop.yaml": "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: shop, namespace: " + ns + "}\nspec:\n" +
				"  chart: {spec: {chart: demo, version: " + version + ", sourceRef: {kind: HelmRepository, name: charts}}}\n",
			"web.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: argocd}\nspec:\n  destination: {namespace: " + ns + "}\n" +
				"  source: {repoURL: \"" + url + "\", chart: web, targetRevision: 1.0.0, helm: {parameters: [{name: image.tag, value: \"" + tag + "\"}]}}\n",
		})
	}
	res := run(t, c, "gitops", side("1.0.0", "a"), side("2.0.0", "b"), "--live", "-o", "json")
	if res.Code != 2 {
		t.Fatalf("exit %d, want 2 (blocked)\n%s\n%s", res.Code, res.Stderr, res.Stdout)
	}
	var doc struct {
		Releases []struct {
			Object string
			Plan   json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(res.Stdout), &doc); err != nil || len(doc.Releases) != 2 {
		t.Fatalf("%v\n%s", err, res.Stdout)
	}
	notes := func(raw json.RawMessage) string {
		var p struct{ Notes []string }
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		return strings.Join(p.Notes, "\n")
	}
	if n := notes(doc.Releases[0].Plan); !strings.Contains(n, "--live: planned against the live objects of Application web") {
		t.Errorf("Application notes do not say it was planned against its live objects:\n%s", n)
	}
	var shop jsonPlan
	if err := json.Unmarshal(doc.Releases[1].Plan, &shop); err != nil {
		t.Fatal(err)
	}
	if n := notes(doc.Releases[1].Plan); !strings.Contains(n, "--live: planned against release shop as stored in namespace "+ns) {
		t.Errorf("HelmRelease notes do not say it was planned live:\n%s", n)
	}
	if shop.Release.Name != "shop" || shop.Release.Operation != "upgrade" {
		t.Errorf("release %+v: want the upgrade of the stored release shop", shop.Release)
	}
	var found bool
	for _, ch := range shop.Changes {
		if ch.Kind != "StatefulSet" || ch.Name != "shop-db" {
			continue
		}
		found = true
		if ch.Class != "recreate-required" || !ch.Destructive || len(ch.Reasons) == 0 || ch.Reasons[0].Source != "server" {
			t.Errorf("StatefulSet shop-db: %s %s destructive %v reasons %+v: want recreate-required from the server's dry-run", ch.Action, ch.Class, ch.Destructive, ch.Reasons)
		}
	}
	if !found {
		t.Errorf("no StatefulSet shop-db in the live plan:\n%s", doc.Releases[1].Plan)
	}
}
