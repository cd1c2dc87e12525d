package flux

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/chartrepo"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/filetree"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// verdictChart is chart kit at version with ConfigMap settings (data a),
// Deployment web (image nginx:tag), while withGone ConfigMap gone, and
// StatefulSet db whose claim template asks for storage.
func verdictChart(t *testing.T, version, a, tag, storage string, withGone bool) string {
	t.Helper()
	files := map[string]string{
		"kit/Chart.yaml":              "apiVersion: v2\nname: kit\nversion: " + version + "\n",
		"kit/templates/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: \"" + a + "\"}\n",
		"kit/templates/web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:` + tag + `"}]}
`,
		"kit/templates/db.yaml": dbStatefulSet(storage),
	}
	if withGone {
		files["kit/templates/gone.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gone}\ndata: {b: \"1\"}\n"
	}
	return filepath.Join(filetree.Write(t, files), "kit")
}

// kitRelease is the GitOps repository's files: the HelmRepository and the
// HelmRelease kit at version.
func kitRelease(ns, url, version string) map[string]string {
	return map[string]string{
		"source.yaml": fmt.Sprintf("apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: charts, namespace: %s}\nspec: {url: %q, interval: 10m}\n", ns, url),
		"release.yaml": fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: kit, namespace: %s}
spec:
  interval: 10m
  chart:
    spec:
      chart: kit
      version: %q
      sourceRef: {kind: HelmRepository, name: charts}
`, ns, version),
	}
}

// liveVerdicts runs `gitops BASE HEAD --live -o json` and returns its
// verdicts by kind/name and its exit code.
func liveVerdicts(t *testing.T, c *testcluster.Cluster, base, head string) (map[string]string, int) {
	t.Helper()
	r := tool(c, "gitops", base, head, "--live", "-o", "json")
	var doc struct {
		Releases []struct {
			Plan struct {
				Changes []struct{ Kind, Name, Action, Class string }
			}
		}
	}
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || len(doc.Releases) != 1 {
		t.Fatalf("gitops --live -o json: %v\n%s", err, r)
	}
	out := map[string]string{}
	for _, ch := range doc.Releases[0].Plan.Changes {
		out[ch.Kind+"/"+ch.Name] = strings.TrimSpace(ch.Action + " " + ch.Class)
	}
	return out, r.Code
}

// TestGitOpsLiveVerdictsMatchHelmController: `gitops --live`'s verdicts on
// a pull request match what helm-controller's upgrade then does: a
// ConfigMap updated in place (same UID, new data), a Deployment rolled (a new
// ReplicaSet), an object the chart drops deleted; and a StatefulSet claim
// template change, recreate-required (blocked), fails helm-controller's
// upgrade on the immutable field and leaves the StatefulSet as it was.
func TestGitOpsLiveVerdictsMatchHelmController(t *testing.T) {
	c := testcluster.Get(t)
	f := Start(t, c)
	url, _ := chartrepo.Serve(t,
		verdictChart(t, "1.0.0", "1", "1.0", "1Gi", true),
		verdictChart(t, "2.0.0", "2", "2.0", "1Gi", false),
		verdictChart(t, "3.0.0", "2", "2.0", "2Gi", false))
	f.volumes(t, "data-db-0")
	v1, v2, v3 := kitRelease(f.NS, url, "1.0.0"), kitRelease(f.NS, url, "2.0.0"), kitRelease(f.NS, url, "3.0.0")
	f.Apply(t, v1["source.yaml"]+"---\n"+v1["release.yaml"])
	f.WaitRelease(t, "kit", "installed", Ready)

	got, code := liveVerdicts(t, c, filetree.Write(t, v1), filetree.Write(t, v2))
	want := map[string]string{"ConfigMap/settings": "update in-place", "Deployment/web": "update rolling", "ConfigMap/gone": "delete", "StatefulSet/db": "noop"}
	if fmt.Sprint(got) != fmt.Sprint(want) || code != 0 {
		t.Errorf("gitops --live 1.0.0 -> 2.0.0: exit %d, verdicts %v, want exit 0 and %v", code, got, want)
	}
	uid := func(kind, name string) string {
		out, err := kubectl(c, "get", "-n", f.NS, kind, name, "-o", "jsonpath={.metadata.uid}")
		if err != nil && strings.Contains(out, "NotFound") {
			return ""
		}
		return out
	}
	settings, web, db := uid("configmap", "settings"), f.Kubectl(t, "get", "-n", f.NS, "deployment", "web", "-o", "jsonpath={.metadata.generation}"), uid("statefulset", "db")
	f.Apply(t, v2["release.yaml"])
	f.WaitRelease(t, "kit", "upgraded to 2.0.0", func(h HelmRelease) bool { return Ready(h) && h.Status.LastAttemptedRevision == "2.0.0" })
	if now := uid("configmap", "settings"); now != settings || f.Kubectl(t, "get", "-n", f.NS, "configmap", "settings", "-o", "jsonpath={.data.a}") != "2" {
		t.Errorf("ConfigMap settings: not updated in place (UID %s -> %s)", settings, now)
	}
	if gen := f.Kubectl(t, "get", "-n", f.NS, "deployment", "web", "-o", "jsonpath={.metadata.generation}"); gen == web {
		t.Errorf("Deployment web: generation %s unchanged, want a rolling update", gen)
	}
	if now := uid("configmap", "gone"); now != "" {
		t.Errorf("ConfigMap gone: still there (%s), want deleted", now)
	}

	got, code = liveVerdicts(t, c, filetree.Write(t, v2), filetree.Write(t, v3))
	if got["StatefulSet/db"] != "update recreate-required" || code != 2 {
		t.Errorf("gitops --live 2.0.0 -> 3.0.0: exit %d, verdicts %v, want exit 2 (blocked) and StatefulSet/db recreate-required", code, got)
	}
	f.Apply(t, v3["release.yaml"])
	h := f.WaitRelease(t, "kit", "refused by the API server", func(h HelmRelease) bool {
		return h.Condition("Ready").Status != "Unknown" && h.Status.LastAttemptedRevision == "3.0.0"
	})
	if msg := h.Condition("Ready").Message; h.Condition("Ready").Status != "False" || !strings.Contains(msg, `StatefulSet.apps "db" is invalid: spec.volumeClaimTemplates`) {
		t.Errorf("helm-controller's upgrade to 3.0.0: want it to fail on the immutable field: %s", h)
	}
	if now := uid("statefulset", "db"); now != db {
		t.Errorf("StatefulSet db: UID %s -> %s", db, now)
	}
}
