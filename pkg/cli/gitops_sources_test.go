package cli

import (
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/chartrepo"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/filetree"
)

// withFile is the chart at dir with one more file, name, as a chart ships
// values for an environment.
func withFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	ch, err := loader.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ch.Files = append(ch.Files, &chart.File{Name: name, Data: []byte(body)})
	out := t.TempDir()
	if err := chartutil.SaveDir(ch, out); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(out, ch.Name())
}

// gitopsPlans runs gitops base head -o json and returns its releases.
func gitopsPlans(t *testing.T, base, head string, wantCode int) gitopsJSON {
	t.Helper()
	out, errOut, code := execute(t, "helm-safe-upgrade", "gitops", base, head, "-o", "json")
	if code != wantCode {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, wantCode, errOut, out)
	}
	var doc gitopsJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Releases) != 1 {
		t.Fatalf("%v: want one release\n%s", err, out)
	}
	return doc
}

// sameVerdicts fails t unless plan has the verdicts of the hand-run
// `--offline --from-chart` plan of args.
func sameVerdicts(t *testing.T, plan json.RawMessage, args ...string) {
	t.Helper()
	want, errOut, code := execute(t, "helm-safe-upgrade", append(args, "--offline", "-o", "json")...)
	if code != ExitOK && code != ExitBlocked {
		t.Fatalf("--offline: exit %d\n%s", code, errOut)
	}
	if g, w := verdicts(t, plan), verdicts(t, []byte(want)); !reflect.DeepEqual(g, w) || len(g) == 0 {
		t.Errorf("gitops %v\n--offline %v", g, w)
	}
}

// TestGitOpsSources: the sources the gate used to refuse, planned from
// real charts served on loopback, each plan the hand-run offline plan of
// the chart, values and release the controller would use.
func TestGitOpsSources(t *testing.T) {
	prodValues := "config:\n  greeting: Hello from prod-values\nweb:\n  replicas: 4\n"
	url, pkgs := chartrepo.Serve(t, withFile(t, demo, "prod-values.yaml", prodValues), demoV2)
	oci, digests := chartrepo.ServeOCIDigests(t, demo, demoV2)
	values := filetree.Write(t, map[string]string{"prod.yaml": prodValues})
	demo1, demo2 := filepath.Join(pkgs, "demo-1.0.0.tgz"), filepath.Join(pkgs, "demo-2.0.0.tgz")

	t.Run("valuesFiles of a HelmChart chartRef", func(t *testing.T) {
		side := func(valuesFiles string) string {
			return filetree.Write(t, map[string]string{"apps/shop.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: apps}
spec: {url: "` + url + `"}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata: {name: shop-chart, namespace: apps}
spec:
  chart: demo
  version: 1.0.0
  sourceRef: {kind: HelmRepository, name: charts}
  valuesFiles: ` + valuesFiles + `
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: shop, namespace: apps}
spec:
  chartRef: {kind: HelmChart, name: shop-chart}
`})
		}
		doc := gitopsPlans(t, side("[values.yaml]"), side("[values.yaml, prod-values.yaml]"), ExitOK)
		if got := strings.Join(verdicts(t, doc.Releases[0].Plan), "\n"); !strings.Contains(got, "Deployment apps/shop-web update") || !strings.Contains(got, "ConfigMap apps/shop-config update") {
			t.Errorf("plan %s: want the Deployment's replicas and the ConfigMap's greeting of prod-values.yaml", got)
		}
		// The chart's values.yaml replaced by its merge with
		// prod-values.yaml renders as the chart with -f prod-values.yaml.
		sameVerdicts(t, doc.Releases[0].Plan, "shop", demo1, "-n", "apps", "--from-chart", demo1, "-f", filepath.Join(values, "prod.yaml"))

		_, errOut, code := execute(t, "helm-safe-upgrade", "gitops", side("[values.yaml]"), side("[values.yaml, absent.yaml]"))
		if code != ExitError || !strings.Contains(errOut, "HelmChart apps/shop-chart (") || !strings.Contains(errOut, "spec.valuesFiles[1]: absent.yaml: not in chart demo 1.0.0") {
			t.Errorf("a values file missing from the chart: exit %d, want 1 naming the HelmChart, the field and the file\n%s", code, errOut)
		}
	})

	t.Run("OCIRepository pinned by digest", func(t *testing.T) {
		side := func(digest string) string {
			// The tag is there to be ignored: the digest wins.
			return filetree.Write(t, map[string]string{"shop.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: demo, namespace: apps}
spec: {url: "` + oci + `/demo", insecure: true, ref: {tag: 1.0.0, digest: "` + digest + `"}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: shop, namespace: apps}
spec:
  chartRef: {kind: OCIRepository, name: demo}
`})
		}
		doc := gitopsPlans(t, side(digests["demo:1.0.0"]), side(digests["demo:2.0.0"]), ExitBlocked)
		if got := strings.Join(verdicts(t, doc.Releases[0].Plan), "\n"); !strings.Contains(got, "StatefulSet apps/shop-db update recreate-required") {
			t.Errorf("plan %s: want the StatefulSet of demo 2.0.0 recreate-required", got)
		}
		sameVerdicts(t, doc.Releases[0].Plan, "shop", demo2, "-n", "apps", "--from-chart", demo1)

		unknown := "sha256:" + strings.Repeat("0", 64)
		_, errOut, code := execute(t, "helm-safe-upgrade", "gitops", side(digests["demo:1.0.0"]), side(unknown))
		if code != ExitError || !strings.Contains(errOut, "HelmRelease apps/shop (") || !strings.Contains(errOut, unknown) {
			t.Errorf("a digest the registry does not hold: exit %d, want 1 naming it\n%s", code, errOut)
		}
	})

	t.Run("Kustomization targetNamespace and postBuild", func(t *testing.T) {
		side := func(version, greeting string) string {
			return filetree.Write(t, map[string]string{
				"clusters/apps.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 10m
  path: ./apps
  sourceRef: {kind: GitRepository, name: flux-system}
  targetNamespace: shop-prod
  postBuild:
    substitute: {DEMO_VERSION: "` + version + `"}
    substituteFrom:
      - {kind: ConfigMap, name: cluster-vars}
      - {kind: Secret, name: cluster-secrets}
`,
				"clusters/vars.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: cluster-vars, namespace: flux-system}
data: {LOG_LEVEL: debug}
---
apiVersion: v1
kind: Secret
metadata: {name: cluster-secrets, namespace: flux-system}
data: {GREETING: ` + base64.StdEncoding.EncodeToString([]byte(greeting+"\n")) + `}
`,
				"clusters/source.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: flux-system}
spec: {url: "` + url + `"}
`,
				"apps/shop.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: shop, namespace: apps}
spec:
  chart: {spec: {chart: demo, version: "${DEMO_VERSION}", sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}}}
  values:
    config: {logLevel: "${LOG_LEVEL:=info}", greeting: "${GREETING}", level: "${LEVEL:=warn}"}
`})
		}
		// Flux removes a variable's line breaks: the value substituted is
		// no line of the Secret's, and is masked too (~q@ and ~z@ are
		// shorter than a value masked line by line).
		base, head := side("1.0.0", "gitops-subst-old-5e1f\n~q@"), side("2.0.0", "gitops-subst-new-77aa\n~z@")
		doc := gitopsPlans(t, base, head, ExitBlocked)
		if r := doc.Releases[0]; r.Object != "HelmRelease shop-prod/shop" {
			t.Errorf("object %s, want the HelmRelease in the Kustomization's targetNamespace", r.Object)
		}
		got := strings.Join(verdicts(t, doc.Releases[0].Plan), "\n")
		if !strings.Contains(got, "StatefulSet shop-prod/shop-db update recreate-required") || !strings.Contains(got, "ConfigMap shop-prod/shop-config update") {
			t.Errorf("plan %s: want the substituted version's StatefulSet and greeting", got)
		}
		vals := filetree.Write(t, map[string]string{
			"base.yaml": "config: {logLevel: debug, greeting: gitops-subst-old-5e1f~q@, level: warn}\n",
			"head.yaml": "config: {logLevel: debug, greeting: gitops-subst-new-77aa~z@, level: warn}\n"})
		sameVerdicts(t, doc.Releases[0].Plan, "shop", demo2, "-n", "shop-prod", "--from-chart", demo1,
			"--from-values", filepath.Join(vals, "base.yaml"), "-f", filepath.Join(vals, "head.yaml"))
		for _, format := range []string{"text", "json", "markdown", "sarif"} {
			out, errOut, _ := execute(t, "helm-safe-upgrade", "gitops", base, head, "-o", format)
			if format == "text" && (!strings.Contains(out, "GREETING") || !strings.Contains(out, "read as Kustomization flux-system/apps (")) {
				t.Errorf("-o text: the substituted GREETING change, or the note naming the Kustomization, is not in the plan:\n%s", out)
			}
			for _, v := range []string{"gitops-subst-old-5e1f", "gitops-subst-new-77aa", "~q@", "~z@"} {
				if strings.Contains(out+errOut, v) || strings.Contains(out+errOut, base64.StdEncoding.EncodeToString([]byte(v+"\n"))) {
					t.Errorf("-o %s: the Secret's variable %q is in the output", format, v)
				}
			}
		}
	})
}
