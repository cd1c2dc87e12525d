package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/testcluster"
)

// serviceWarnChart is four Services carrying the chart version in their
// metadata labels: one the API server warns about on no update, and three
// it warns about on every update, whatever the update changes (its Service
// strategy's WarningsOnUpdate is GetWarningsForService of the object
// stored).
func serviceWarnChart(t *testing.T, version string) string {
	label := "metadata: {name: %s, labels: {helm.sh/chart: 'svc-{{ .Chart.Version }}'}%s}\n"
	svc := func(name, annotations, spec string) string {
		return "apiVersion: v1\nkind: Service\n" + fmt.Sprintf(label, name, annotations) +
			"spec: {selector: {app: " + name + "}, ports: [{port: 80}]" + spec + "}\n"
	}
	return writeChart(t, "svc", version, map[string]string{
		"plain.yaml": svc("plain", "", ""),
		"ext.yaml":   svc("ext", "", ", externalIPs: [192.0.2.10]"),
		"close.yaml": svc("close", "", ", trafficDistribution: PreferClose"),
		"hints.yaml": svc("hints", ", annotations: {service.kubernetes.io/topology-aware-hints: auto}", ""),
	})
}

// serviceWarnings are the Service warnings among a run's stderr lines,
// sorted.
func serviceWarnings(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "is deprecated") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	slices.Sort(out)
	return out
}

// TestDerivedBumpKeepsServiceWarnings: a chart bump changes only the
// Services' labels, which the plan derives without a dry-run, unless the
// server would warn about the Service stored (externalIPs, the deprecated
// trafficDistribution PreferClose, the deprecated topology-aware-hints
// annotation): those are asked, so the default plan prints the warnings
// --server-dry-run=all prints, for Helm 3 and Helm 4 releases alike.
func TestDerivedBumpKeepsServiceWarnings(t *testing.T) {
	c := testcluster.Get(t)
	for _, helm := range []string{"helm3", "helm4"} {
		t.Run(helm, func(t *testing.T) {
			ns := c.Namespace(t)
			bin := c.Helm3
			if helm == "helm4" {
				bin = c.Helm4
			}
			mustBin(t, c, bin, "install", "svc", serviceWarnChart(t, "1.0.0"), "-n", ns)
			warnings := map[string][]string{}
			for _, mode := range []string{"needed", "all"} {
				before := auditMark(t, c)
				p, r := planJSON(t, c, "svc", serviceWarnChart(t, "2.0.0"), "-n", ns, "--server-dry-run="+mode)
				if r.Code != 0 {
					t.Fatalf("--server-dry-run=%s: exit %d\n%s", mode, r.Code, r.Stderr)
				}
				warnings[mode] = serviceWarnings(r.Stderr)
				asked := 0
				for _, name := range []string{"plain", "ext", "close", "hints"} {
					want := "server"
					if mode == "needed" && name == "plain" {
						want = "derived"
					}
					if want == "server" {
						asked++
					}
					if got := p.change(t, "Service", name).Prediction; got != want {
						t.Errorf("--server-dry-run=%s: Service/%s: prediction %q, want %q", mode, name, got, want)
					}
				}
				if n := dryRunPatches(t, c, ns, before)["services"]; n != asked {
					t.Errorf("--server-dry-run=%s: %d Service dry-runs, want %d", mode, n, asked)
				}
				assertOnlyDryRunWrites(t, c, ns, before)
			}
			if len(warnings["all"]) < 3 {
				t.Fatalf("--server-dry-run=all printed %d Service warnings, want one for each of ext, close and hints: %q", len(warnings["all"]), warnings["all"])
			}
			if !slices.Equal(warnings["needed"], warnings["all"]) {
				t.Errorf("Service warnings differ:\ndefault %q\nall     %q", warnings["needed"], warnings["all"])
			}
		})
	}
}
