package e2e

import (
	"fmt"
	"slices"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
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

// TestDerivedBumpKeepsServiceWarnings: a chart bump changes only the
// Services' labels, which the plan derives without a dry-run, unless the
// server would warn about the Service stored (externalIPs, the deprecated
// trafficDistribution PreferClose, the deprecated topology-aware-hints
// annotation): those are asked, so the default plan prints the warnings
// --server-dry-run=all prints, for Helm 3 and Helm 4 releases alike.
func TestDerivedBumpKeepsServiceWarnings(t *testing.T) {
	c := testcluster.Get(t)
	eachHelm(t, c, func(t *testing.T, bin string) {
		ns := c.Namespace(t)
		mustBin(t, c, bin, "install", "svc", serviceWarnChart(t, "1.0.0"), "-n", ns)
		warnings := map[string][]string{}
		for _, mode := range []string{"needed", "all"} {
			before := auditMark(t, c)
			p, r := planJSON(t, c, "svc", serviceWarnChart(t, "2.0.0"), "-n", ns, "--server-dry-run="+mode)
			if r.Code != 0 {
				t.Fatalf("--server-dry-run=%s: exit %d\n%s", mode, r.Code, r.Stderr)
			}
			warnings[mode] = warningLines(r.Stderr, "is deprecated")
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

// updateWarnChart is a Helm 4 release whose objects the API server warns
// about on every update, a server-side apply that changes nothing
// included: a Service with externalIPs, a claim with the deprecated beta
// storage-class annotation, a StatefulSet that keeps every revision; and a
// ConfigMap whose data is the version. (A NetworkPolicy's CIDR with host
// bits set, warned about too, can no longer be created: the unit tests
// cover it.)
func updateWarnChart(t *testing.T, version string) string {
	return writeChart(t, "warned", version, map[string]string{
		"cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {version: '{{ .Chart.Version }}'}\n",
		"svc.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: ext}\nspec: {selector: {app: ext}, ports: [{port: 80}], externalIPs: [192.0.2.10]}\n",
		"pvc.yaml": "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, annotations: {volume.beta.kubernetes.io/storage-class: slow}}\n" +
			"spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n",
		"sts.yaml": "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\n" +
			"spec: {replicas: 0, revisionHistoryLimit: -1, selector: {matchLabels: {app: db}}, template: {metadata: {labels: {app: db}}, spec: {containers: [{name: db, image: 'postgres:16'}]}}}\n",
	})
}

// TestHelm4NoopKeepsUpdateWarnings: Helm 4 applies every object, the
// unchanged ones too, and the API server's update strategies for a
// Service, a claim and a StatefulSet warn about the whole object on each
// such apply. The plan decides most Helm 4 no-ops without a dry-run, but
// not these: the default plan asks them and prints the warnings
// --server-dry-run=all prints.
func TestHelm4NoopKeepsUpdateWarnings(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	mustBin(t, c, c.Helm4, "install", "warned", updateWarnChart(t, "1.0.0"), "-n", ns)
	warnings := map[string][]string{}
	for _, mode := range []string{"needed", "all"} {
		before := auditMark(t, c)
		_, r := planJSON(t, c, "warned", updateWarnChart(t, "2.0.0"), "-n", ns, "--server-dry-run="+mode)
		if r.Code != 0 {
			t.Fatalf("--server-dry-run=%s: exit %d\n%s", mode, r.Code, r.Stderr)
		}
		warnings[mode] = warningLines(r.Stderr, "externalIPs", "storage-class", "revisionHistoryLimit")
		n := dryRunPatches(t, c, ns, before)
		for _, resource := range []string{"services", "persistentvolumeclaims", "statefulsets"} {
			if n[resource] != 1 {
				t.Errorf("--server-dry-run=%s: %d dry-runs of %s, want 1 (the server warns about it)", mode, n[resource], resource)
			}
		}
		assertOnlyDryRunWrites(t, c, ns, before)
	}
	if len(warnings["all"]) < 3 {
		t.Fatalf("--server-dry-run=all printed %d of the three objects' warnings: %q", len(warnings["all"]), warnings["all"])
	}
	if !slices.Equal(warnings["needed"], warnings["all"]) {
		t.Errorf("warnings differ:\ndefault %q\nall     %q", warnings["needed"], warnings["all"])
	}
}
