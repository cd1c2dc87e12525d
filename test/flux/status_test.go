package flux

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/chartrepo"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// statusDoc is what the test reads of `status -o json`.
type statusDoc struct {
	Releases []struct {
		Name, HelmStatus string
		Objects          []struct {
			Kind, Name, State, Next string
			Drift                   []struct{ Path, Stored, Live, Manager string }
		}
	}
}

// TestStatusAndLogReadHelmController: `status` and `log` read a release
// helm-controller made (its records, its descriptions). With the
// HelmRelease's drift detection on, a field someone changes is reported by
// `status` as drift the next upgrade reverts in place, naming the manager;
// helm-controller's next reconcile corrects exactly that, and `status` is
// in sync again.
func TestStatusAndLogReadHelmController(t *testing.T) {
	c := testcluster.Get(t)
	f := Start(t, c)
	url, _ := chartrepo.Serve(t, shopChart(t, "1.0.0"))
	f.Apply(t, helmRepository(url)+`---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: shop}
spec:
  interval: 10m
  driftDetection: {mode: enabled}
  chart:
    spec:
      chart: shop
      version: "1.0.0"
      sourceRef: {kind: HelmRepository, name: charts}
  values: {greeting: from-flux}
`)
	f.WaitRelease(t, "shop", "installed", Ready)

	if r := tool(c, "status", "shop", "-n", f.NS, "--detailed-exitcode"); r.Code != 0 {
		t.Errorf("status of helm-controller's release: want exit 0 (in sync)\n%s", r)
	}
	r := mustTool(t, c, "log", "shop", "-n", f.NS, "-o", "json")
	var log struct {
		Revisions []struct {
			Revision            int
			Status, Description string
		}
	}
	if err := json.Unmarshal([]byte(r.Stdout), &log); err != nil || len(log.Revisions) != 1 ||
		log.Revisions[0].Status != "deployed" || !strings.Contains(log.Revisions[0].Description, "Install complete") {
		t.Errorf("log of helm-controller's release: %+v (%v), want revision 1 deployed, Helm's description\n%s", log.Revisions, err, r.Stdout)
	}

	f.Kubectl(t, "patch", "-n", f.NS, "configmap", "shop-settings", "--field-manager", "someone", "--type", "merge", "-p", `{"data":{"greeting":"edited"}}`)
	r = tool(c, "status", "shop", "-n", f.NS, "-o", "json", "--detailed-exitcode")
	var doc statusDoc
	if err := json.Unmarshal([]byte(r.Stdout), &doc); r.Code != 3 || err != nil || len(doc.Releases) != 1 {
		t.Fatalf("status after the edit: want exit 3 (drift): %v\n%s", err, r)
	}
	// The verdict on the revert (next) is Helm 4's upgrade's: a field
	// another manager took is a conflict (invalid); helm-controller forces
	// conflicts and reverts it (docs/status.md, limits).
	var drift []string
	for _, o := range doc.Releases[0].Objects {
		if o.State != "in-sync" {
			drift = append(drift, fmt.Sprintf("%s/%s %s %+v", o.Kind, o.Name, o.State, o.Drift))
		}
	}
	want := "ConfigMap/shop-settings drifted [{Path:data.greeting Stored:from-flux Live:edited Manager:someone}]"
	if strings.Join(drift, "\n") != want {
		t.Errorf("status after the edit:\n%s\nwant\n%s", strings.Join(drift, "\n"), want)
	}

	// helm-controller's drift detection at its next reconcile.
	f.Kubectl(t, "annotate", "-n", f.NS, "--overwrite", "helmrelease", "shop", "reconcile.fluxcd.io/requestedAt=drift")
	testcluster.Eventually(t, "helm-controller corrects the drift", func() (bool, string) {
		out := f.Kubectl(t, "get", "-n", f.NS, "configmap", "shop-settings", "-o", "jsonpath={.data.greeting}")
		return out == "from-flux", out
	})
	if r := tool(c, "status", "shop", "-n", f.NS, "--detailed-exitcode"); r.Code != 0 {
		t.Errorf("status once helm-controller corrected the drift: want exit 0\n%s", r)
	}
}
