package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// compliantChart is a Deployment whose pod template passes PodSecurity's
// restricted level, carrying the chart version in its metadata labels
// only.
func compliantChart(t *testing.T, version string) string {
	return writeChart(t, "ok", version, map[string]string{"d.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: safe, labels: {helm.sh/chart: 'ok-{{ .Chart.Version }}'}}
spec:
  replicas: 1
  selector: {matchLabels: {app: safe}}
  template:
    metadata: {labels: {app: safe}}
    spec:
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: app
        image: "nginx:1.25"
        securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
`})
}

// warningLines are the lines of a run's stderr that hold any of texts,
// trimmed and sorted: the server's warnings a plan printed.
func warningLines(stderr string, texts ...string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if slices.ContainsFunc(texts, func(t string) bool { return strings.Contains(l, t) }) {
			out = append(out, strings.TrimSpace(l))
		}
	}
	slices.Sort(out)
	return out
}

// podSecurityWarnings are the PodSecurity warnings among a run's stderr
// lines, sorted.
func podSecurityWarnings(stderr string) []string {
	return warningLines(stderr, "would violate PodSecurity")
}

// TestDerivedBumpKeepsPodSecurityWarning: PodSecurity admission evaluates
// the pod template of every update of a pod controller, a label-only chart
// bump included, and warns when it fails the namespace's warn level. In a
// namespace labelled warn: restricted the Deployment's bump is therefore
// asked (one dry-run in the audit log) and the default plan prints the
// warning --server-dry-run=all prints, while the ConfigMap, Secret and
// Service are still derived; a Deployment whose template passes restricted
// is derived (PodSecurity evaluated locally as admission does) and neither
// plan warns. An unlabelled namespace (the API server's default,
// privileged) is TestDerivedChartBump: everything derived.
func TestDerivedBumpKeepsPodSecurityWarning(t *testing.T) {
	c := testcluster.Get(t)
	eachHelm(t, c, func(t *testing.T, bin string) {
		ns := c.Namespace(t)
		warnRestricted(t, c, ns)
		mustBin(t, c, bin, "install", "app", bumpChart(t, "1.0.0"), "-n", ns)
		mustBin(t, c, bin, "install", "ok", compliantChart(t, "1.0.0"), "-n", ns)

		warnings := map[string][]string{}
		for _, mode := range []string{"needed", "all"} {
			before := auditMark(t, c)
			p, r := planJSON(t, c, "app", bumpChart(t, "2.0.0"), "-n", ns, "--server-dry-run="+mode)
			if r.Code != 0 {
				t.Fatalf("--server-dry-run=%s: exit %d\n%s", mode, r.Code, r.Stderr)
			}
			warnings[mode] = podSecurityWarnings(r.Stderr)
			n := dryRunPatches(t, c, ns, before) // Helm 4's dry-run applies are PATCHes too
			for _, o := range bumped {
				want, prediction := 1, "server"
				if mode == "needed" && o.kind != "Deployment" {
					want, prediction = 0, "derived"
				}
				if n[o.resource] != want {
					t.Errorf("--server-dry-run=%s: %s/%s: %d dry-runs, want %d", mode, o.kind, o.name, n[o.resource], want)
				}
				if got := p.change(t, o.kind, o.name).Prediction; got != prediction {
					t.Errorf("--server-dry-run=%s: %s/%s: prediction %q, want %q", mode, o.kind, o.name, got, prediction)
				}
			}
			assertOnlyDryRunWrites(t, c, ns, before)
		}
		if len(warnings["all"]) == 0 || !strings.Contains(warnings["all"][0], `"restricted:latest"`) {
			t.Fatalf("--server-dry-run=all printed no PodSecurity warning for the Deployment: %q", warnings["all"])
		}
		if !slices.Equal(warnings["needed"], warnings["all"]) {
			t.Errorf("PodSecurity warnings differ:\ndefault %q\nall     %q", warnings["needed"], warnings["all"])
		}

		before := auditMark(t, c)
		p, r := planJSON(t, c, "ok", compliantChart(t, "2.0.0"), "-n", ns)
		if r.Code != 0 {
			t.Fatalf("compliant: exit %d\n%s", r.Code, r.Stderr)
		}
		if got := p.change(t, "Deployment", "safe").Prediction; got != "derived" {
			t.Errorf("a template passing restricted: prediction %q, want derived", got)
		}
		if n := dryRunPatches(t, c, ns, before); len(n) != 0 {
			t.Errorf("a template passing restricted: dry-runs %v, want none", n)
		}
		if w := podSecurityWarnings(r.Stderr); len(w) != 0 {
			t.Errorf("a template passing restricted: warnings %q", w)
		}
		_, r = planJSON(t, c, "ok", compliantChart(t, "2.0.0"), "-n", ns, "--server-dry-run=all")
		if w := podSecurityWarnings(r.Stderr); r.Code != 0 || len(w) != 0 {
			t.Errorf("a template passing restricted, --server-dry-run=all: exit %d, warnings %q (the server disagrees)\n%s", r.Code, w, r.Stderr)
		}
	})
}

// eachHelm runs body as the subtests helm3 and helm4, with the helm binary
// of each.
func eachHelm(t *testing.T, c *testcluster.Cluster, body func(t *testing.T, bin string)) {
	t.Helper()
	for _, helm := range []string{"helm3", "helm4"} {
		bin := c.Helm3
		if helm == "helm4" {
			bin = c.Helm4
		}
		t.Run(helm, func(t *testing.T) { body(t, bin) })
	}
}

// warnRestricted labels namespace ns for PodSecurity to warn at the
// restricted level.
func warnRestricted(t *testing.T, c *testcluster.Cluster, ns string) {
	t.Helper()
	labelNamespace(t, c, ns, `"pod-security.kubernetes.io/warn":"restricted"`)
}

// labelNamespace sets labels (JSON members) on namespace ns.
func labelNamespace(t *testing.T, c *testcluster.Cluster, ns, labels string) {
	t.Helper()
	patch := []byte(`{"metadata":{"labels":{` + labels + `}}}`)
	if _, err := c.Clientset(t).CoreV1().Namespaces().Patch(context.Background(), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling namespace %s: %v", ns, err)
	}
}
