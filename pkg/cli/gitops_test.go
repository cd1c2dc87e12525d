package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/chartrepo"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/filetree"
)

// gitopsRepo is a GitOps repository's base and head: a HelmRelease of the
// demo chart (1.0.0 → 2.0.0: the StatefulSet's claim template grows),
// with values from a ConfigMap and, in the head, a kustomize
// post-renderer; an Application of the web chart whose parameter changes
// the image (a rolling update). extra files are added to the head.
func gitopsRepo(t *testing.T, url string, head map[string]string) (string, string) {
	t.Helper()
	source := `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: flux-system}
spec: {url: "` + url + `"}
`
	shop := `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: shop
  namespace: apps
spec:
  interval: 10m
  chart:
    spec:
      chart: demo
      version: 1.0.0
      sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}
  valuesFrom:
    - kind: ConfigMap
      name: shop-values
  values:
    web: {replicas: 3}
`
	values := `apiVersion: v1
kind: ConfigMap
metadata: {name: shop-values, namespace: apps}
data:
  values.yaml: |
    config:
      greeting: Hello from git
`
	app := `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  project: default
  destination: {server: "https://kubernetes.default.svc", namespace: web}
  source:
    repoURL: "` + url + `"
    chart: web
    targetRevision: 1.0.0
    helm:
      parameters:
        - name: image.tag
          value: v1
`
	patch := `  postRenderers:
    - kustomize:
        patches:
          - target: {kind: Deployment, name: shop-web}
            patch: |
              - op: add
                path: /metadata/annotations
                value: {example.com/patched: "by-flux"}
`
	baseFiles := map[string]string{"flux/source.yaml": source, "apps/shop.yaml": shop, "apps/values.yaml": values, "argocd/web.yaml": app}
	headFiles := map[string]string{"flux/source.yaml": source, "apps/values.yaml": values,
		"apps/shop.yaml":  strings.Replace(shop, "version: 1.0.0", "version: 2.0.0", 1) + patch,
		"argocd/web.yaml": strings.Replace(app, "value: v1", "value: v2", 1)}
	for k, v := range head {
		headFiles[k] = v
	}
	return filetree.Write(t, baseFiles), filetree.Write(t, headFiles)
}

// gitopsJSON is the JSON report of a gitops run.
type gitopsJSON struct {
	Releases []struct {
		Object string          `json:"object"`
		File   string          `json:"file"`
		Line   int             `json:"line"`
		Plan   json.RawMessage `json:"plan"`
		Note   string          `json:"note"`
	} `json:"releases"`
}

// verdicts are a JSON plan's changes as KIND NAMESPACE/NAME ACTION CLASS.
func verdicts(t *testing.T, plan []byte) []string {
	t.Helper()
	var p struct {
		Changes []struct {
			Kind, Namespace, Name, Action, Class string
		} `json:"changes"`
	}
	if err := json.Unmarshal(plan, &p); err != nil {
		t.Fatalf("%v\n%s", err, plan)
	}
	var out []string
	for _, c := range p.Changes {
		out = append(out, c.Kind+" "+c.Namespace+"/"+c.Name+" "+c.Action+" "+c.Class)
	}
	sort.Strings(out)
	return out
}

// TestGitOpsPullRequest is issue #38's scenario: base and head checkouts of
// a GitOps repository, charts from a chart repository on loopback. The
// HelmRelease's chart upgrade recreates the database's StatefulSet
// (blocked, exit 2); the Application's parameter rolls its Deployment; the
// post-renderer's patch is in the plan; SARIF points at the changed line.
func TestGitOpsPullRequest(t *testing.T) {
	url, _ := chartrepo.Serve(t, demo, demoV2, chartrepo.WebChart(t))
	base, head := gitopsRepo(t, url, nil)

	out, errOut, code := execute(t, "helm-safe-upgrade", "gitops", base, head, "-o", "json")
	if code != ExitBlocked {
		t.Fatalf("exit %d, want 2 (blocked)\n%s\n%s", code, errOut, out)
	}
	var doc gitopsJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Releases) != 2 || doc.Releases[0].Object != "Application argocd/web" || doc.Releases[1].Object != "HelmRelease apps/shop" {
		t.Fatalf("releases %+v", doc.Releases)
	}
	app, shop := doc.Releases[0], doc.Releases[1]
	if got := verdicts(t, app.Plan); !reflect.DeepEqual(got, []string{"Deployment web/web update rolling"}) {
		t.Errorf("Application plan %v, want the Deployment's rolling update", got)
	}
	shopVerdicts := strings.Join(verdicts(t, shop.Plan), "\n")
	for _, want := range []string{"StatefulSet apps/shop-db update recreate-required", "Deployment apps/shop-web update rolling"} {
		if !strings.Contains(shopVerdicts, want) {
			t.Errorf("HelmRelease plan lacks %q:\n%s", want, shopVerdicts)
		}
	}
	if !strings.Contains(string(shop.Plan), "example.com/patched") || !strings.Contains(string(shop.Plan), "by-flux") {
		t.Errorf("the post-renderer's patch is not in the HelmRelease's plan")
	}
	if !strings.HasSuffix(shop.File, "apps/shop.yaml") || shop.Line != 11 {
		t.Errorf("HelmRelease change at %s:%d, want apps/shop.yaml:11 (the version)", shop.File, shop.Line)
	}
	if !strings.HasSuffix(app.File, "argocd/web.yaml") || app.Line != 14 {
		t.Errorf("Application change at %s:%d, want argocd/web.yaml:14 (the parameter's value)", app.File, app.Line)
	}

	sarif, _, code := execute(t, "helm-safe-upgrade", "gitops", base, head, "-o", "sarif")
	if code != ExitBlocked {
		t.Fatalf("sarif: exit %d", code)
	}
	var log struct {
		Runs []struct {
			Results []struct {
				RuleID    string `json:"ruleId"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string } `json:"artifactLocation"`
						Region           struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(sarif), &log); err != nil || len(log.Runs) != 1 || len(log.Runs[0].Results) != 1 {
		t.Fatalf("SARIF: %v, want one run with the StatefulSet's result\n%s", err, sarif)
	}
	loc := log.Runs[0].Results[0].Locations[0].PhysicalLocation
	if r := log.Runs[0].Results[0]; r.RuleID != "recreate-required" || !strings.HasSuffix(loc.ArtifactLocation.URI, "apps/shop.yaml") || loc.Region.StartLine != 11 {
		t.Errorf("SARIF result %s at %s:%d, want recreate-required at apps/shop.yaml:11", r.RuleID, loc.ArtifactLocation.URI, loc.Region.StartLine)
	}

	// The acknowledgement committed beside the manifests lets it through.
	base, head = gitopsRepo(t, url, map[string]string{DefaultAckFile: "- kind: StatefulSet\n  namespace: apps\n  name: shop-db\n  reason: reviewed in the pull request\n"})
	text, errOut, code := execute(t, "helm-safe-upgrade", "gitops", base, head, "--detailed-exitcode")
	if code != ExitPending {
		t.Fatalf("with the ack file in HEAD: exit %d, want 3\n%s\n%s", code, errOut, text)
	}
	for _, want := range []string{"=== Application argocd/web (", "=== HelmRelease apps/shop (", "recreate-required", "chart demo@1.0.0 from " + url + " → demo@2.0.0"} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
}

// TestGitOpsEqualsOffline: the Application's plan is the plan of
// --offline --from-chart with the chart, values and release name
// reconstructed by hand; the HelmRelease's verdicts are too (its objects
// also carry helm-controller's origin labels, which no flag adds).
func TestGitOpsEqualsOffline(t *testing.T) {
	url, pkgs := chartrepo.Serve(t, demo, demoV2, chartrepo.WebChart(t))
	base, head := gitopsRepo(t, url, nil)
	out, errOut, _ := execute(t, "helm-safe-upgrade", "gitops", base, head, "-o", "json")
	var doc gitopsJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	values := filetree.Write(t, map[string]string{
		"web-base.yaml": "image: {tag: v1}\n", "web-head.yaml": "image: {tag: v2}\n",
		"shop.yaml": "config: {greeting: Hello from git}\nweb: {replicas: 3}\n",
	})
	for _, tc := range []struct {
		name string
		args []string
		got  json.RawMessage
	}{
		{"Application", []string{"web", filepath.Join(pkgs, "web-1.0.0.tgz"), "-n", "web", "--offline",
			"--from-chart", filepath.Join(pkgs, "web-1.0.0.tgz"), "--from-values", filepath.Join(values, "web-base.yaml"), "-f", filepath.Join(values, "web-head.yaml"), "-o", "json"}, doc.Releases[0].Plan},
		{"HelmRelease", []string{"shop", filepath.Join(pkgs, "demo-2.0.0.tgz"), "-n", "apps", "--offline",
			"--from-chart", filepath.Join(pkgs, "demo-1.0.0.tgz"), "--from-values", filepath.Join(values, "shop.yaml"), "-f", filepath.Join(values, "shop.yaml"), "-o", "json"}, doc.Releases[1].Plan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, errOut, code := execute(t, "helm-safe-upgrade", tc.args...)
			if code != ExitOK && code != ExitBlocked {
				t.Fatalf("--offline: exit %d\n%s", code, errOut)
			}
			if g, w := verdicts(t, tc.got), verdicts(t, []byte(want)); !reflect.DeepEqual(g, w) {
				t.Errorf("gitops %v\n--offline %v", g, w)
			}
			if tc.name == "Application" {
				if g, w := changesOf(t, tc.got), changesOf(t, []byte(want)); g != w {
					t.Errorf("the changes differ:\ngitops %s\n--offline %s", g, w)
				}
			}
		})
	}
}

// changesOf is a JSON plan's changes, as compact JSON.
func changesOf(t *testing.T, plan []byte) string {
	t.Helper()
	var p map[string]json.RawMessage
	if err := json.Unmarshal(plan, &p); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, p["changes"]); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestGitOpsBadInput: what cannot be planned is exit 1 naming the object,
// its file and the field.
func TestGitOpsBadInput(t *testing.T) {
	url, _ := chartrepo.Serve(t, demo, demoV2, chartrepo.WebChart(t))
	for _, tc := range []struct {
		name string
		head map[string]string
		want []string
	}{
		{"missing valuesFrom ConfigMap", map[string]string{"apps/values.yaml": "# moved\n"},
			[]string{"HelmRelease apps/shop", "apps/shop.yaml:", "spec.valuesFrom[0]: ConfigMap apps/shop-values is not in the files"}},
		{"unknown chart version", map[string]string{"apps/shop.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: shop, namespace: apps}
spec:
  chart: {spec: {chart: demo, version: 9.9.9, sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}}}
`}, []string{"HelmRelease apps/shop (", "apps/shop.yaml:5): spec.chart.spec: the head's chart demo@9.9.9", `version "9.9.9" not found`}},
		{"malformed HelmRelease", map[string]string{"apps/shop.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: shop, namespace: apps}
spec:
  chart:
    spec: {version: 2.0.0, sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}}
`}, []string{"HelmRelease apps/shop", "apps/shop.yaml:6", "spec.chart.spec.chart: missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, head := gitopsRepo(t, url, tc.head)
			out, errOut, code := execute(t, "helm-safe-upgrade", "gitops", base, head)
			if code != ExitError {
				t.Fatalf("exit %d, want 1\n%s\n%s", code, errOut, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("error does not say %q:\n%s", w, errOut)
				}
			}
		})
	}
}

// TestGitOpsSecretValuesNeverLeak: values a HelmRelease takes from a
// Secret of the files (one value at a targetPath, or single values of a
// values document), which the chart puts in a ConfigMap, are masked in
// every format, base and head alike, and an error about one quotes none.
func TestGitOpsSecretValuesNeverLeak(t *testing.T) {
	url, _ := chartrepo.Serve(t, demo, demoV2, chartrepo.WebChart(t))
	for _, tc := range []struct {
		name       string
		key        string    // the Secret's key
		valuesFrom string    // its entry, after the ConfigMap's
		data       [2]string // the key's value in the base and the head
		hidden     []string  // never in any output (with their base64)
		code       int
		want       string // in stdout, or stderr when the exit is 1
	}{
		{"value at targetPath", "greeting", "      valuesKey: greeting\n      targetPath: config.greeting\n",
			[2]string{"gitops-greeting-old-9c1d", "gitops-greeting-new-7f3a"},
			[]string{"gitops-greeting-old-9c1d", "gitops-greeting-new-7f3a"}, ExitOK, "GREETING"},
		{"--set pieces at targetPath", "greeting", "      valuesKey: greeting\n      targetPath: config.greeting\n",
			[2]string{"greet-piece-old-3e1a,config.logLevel=level-piece-old-5c2b", "greet-piece-new-6d4f,config.logLevel=level-piece-new-8a7e"},
			[]string{"greet-piece-old-3e1a", "level-piece-old-5c2b", "greet-piece-new-6d4f", "level-piece-new-8a7e"}, ExitOK, "LOG_LEVEL"},
		{"values document", "values.yaml", "",
			[2]string{
				"config:\n  greeting: \"first-line-old-2b9c\\nsecond-line-old-4d1e\"\n  logLevel: \"20261203\"\ndb:\n  database: 31415926\n",
				"config:\n  greeting: \"first-line-new-7a3f\\nsecond-line-new-9e6b\"\n  logLevel: \"20270415\"\ndb:\n  database: 27182818\n"},
			[]string{"first-line-old-2b9c", "second-line-old-4d1e", "first-line-new-7a3f", "second-line-new-9e6b",
				"20261203", "20270415", "31415926", "3.1415926e+07", "27182818", "2.7182818e+07"}, ExitOK, "GREETING"},
		{"comma error at targetPath", "greeting", "      valuesKey: greeting\n      targetPath: config.greeting\n",
			[2]string{"s3cr3tpart1-old-1f2e,s3cr3tpart2-old-3d4c", "s3cr3tpart1-new-5b6a,s3cr3tpart2-new-7980"},
			[]string{"s3cr3tpart1-old-1f2e", "s3cr3tpart2-old-3d4c", "s3cr3tpart1-new-5b6a", "s3cr3tpart2-new-7980"},
			ExitError, "apps/shop.yaml:19): spec.valuesFrom[1].targetPath: config.greeting: the Secret's value does not parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secret := func(v string) string {
				return "apiVersion: v1\nkind: Secret\nmetadata: {name: shop-secret, namespace: apps}\ndata:\n  " + tc.key + ": " + base64.StdEncoding.EncodeToString([]byte(v)) + "\n"
			}
			base, head := gitopsRepo(t, url, nil)
			for i, dir := range []string{base, head} {
				shop, err := os.ReadFile(filepath.Join(dir, "apps/shop.yaml"))
				if err != nil {
					t.Fatal(err)
				}
				withSecret := strings.Replace(string(shop), "      name: shop-values\n", "      name: shop-values\n    - kind: Secret\n      name: shop-secret\n"+tc.valuesFrom, 1)
				for name, body := range map[string]string{"apps/shop.yaml": withSecret, "apps/secret.yaml": secret(tc.data[i])} {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, format := range []string{"text", "json", "markdown", "sarif"} {
				out, errOut, code := execute(t, "helm-safe-upgrade", "gitops", base, head, "-o", format, "--ack-all-destructive")
				if code != tc.code {
					t.Fatalf("-o %s: exit %d, want %d\n%s", format, code, tc.code, errOut)
				}
				if shown := map[bool]string{true: errOut, false: out}[code == ExitError]; (format == "text" || code == ExitError) && !strings.Contains(shown, tc.want) {
					t.Errorf("-o %s: %q is not in the output:\n%s", format, tc.want, shown)
				}
				for _, v := range append(tc.hidden, tc.data[:]...) {
					for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v))} {
						if strings.Contains(out+errOut, form) {
							t.Errorf("-o %s: the Secret's value %q is in the output", format, form)
						}
					}
				}
			}
		})
	}
}

// TestGitOpsOCI: charts from an OCI registry on loopback, named by a
// HelmRepository of type oci and by an OCIRepository (spec.chartRef),
// fetched with Helm's registry client; the chart upgrade is planned and
// blocked as from an HTTP repository.
func TestGitOpsOCI(t *testing.T) {
	oci := chartrepo.ServeOCI(t, demo, demoV2)
	for _, tc := range []struct {
		name, source, ref string
	}{
		{"HelmRepository type oci", `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: apps}
spec: {type: oci, url: "` + oci + `", insecure: true}
`, `  chart: {spec: {chart: demo, version: VERSION, sourceRef: {kind: HelmRepository, name: charts}}}
`},
		{"OCIRepository chartRef", `apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: demo, namespace: apps}
spec: {url: "` + oci + `/demo", insecure: true, ref: {tag: VERSION}}
`, `  chartRef: {kind: OCIRepository, name: demo}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			side := func(version string) string {
				hr := "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: shop, namespace: apps}\nspec:\n" + tc.ref
				return filetree.Write(t, map[string]string{"source.yaml": strings.ReplaceAll(tc.source, "VERSION", version), "shop.yaml": strings.ReplaceAll(hr, "VERSION", version)})
			}
			out, errOut, code := execute(t, "helm-safe-upgrade", "gitops", side("1.0.0"), side("2.0.0"), "-o", "json")
			if code != ExitBlocked {
				t.Fatalf("exit %d, want 2\n%s\n%s", code, errOut, out)
			}
			var doc gitopsJSON
			if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Releases) != 1 {
				t.Fatalf("%v\n%s", err, out)
			}
			if got := strings.Join(verdicts(t, doc.Releases[0].Plan), "\n"); !strings.Contains(got, "StatefulSet apps/shop-db update recreate-required") {
				t.Errorf("plan %s: want the StatefulSet recreate-required", got)
			}
		})
	}
}

// TestGitOpsAddedRemovedUnchanged: an object new in the head is planned as
// an install, one the head removes is named with what its controller
// does, and a pull request that changes no render plans nothing (exit 0).
func TestGitOpsAddedRemovedUnchanged(t *testing.T) {
	url, _ := chartrepo.Serve(t, demo, demoV2, chartrepo.WebChart(t))
	base, head := gitopsRepo(t, url, nil)
	if err := os.Remove(filepath.Join(head, "argocd/web.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(base, "apps/shop.yaml")); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := execute(t, "helm-safe-upgrade", "gitops", base, head, "-o", "json", "--detailed-exitcode")
	if code != ExitPending {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, errOut, out)
	}
	var doc gitopsJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Releases) != 2 {
		t.Fatalf("%v\n%s", err, out)
	}
	if r := doc.Releases[0]; r.Object != "Application argocd/web" || r.Plan != nil || !strings.Contains(r.Note, "removed from the head") {
		t.Errorf("removed Application: %+v", r)
	}
	if got := strings.Join(verdicts(t, doc.Releases[1].Plan), "\n"); !strings.Contains(got, "StatefulSet apps/shop-db create") || strings.Contains(got, "update") {
		t.Errorf("new HelmRelease: want creates only, got\n%s", got)
	}
	// Rendered as helm-controller installs it (.Release.IsInstall, revision
	// 1), not as an upgrade of an empty release (test/flux compares the
	// render with the real controller's).
	var added struct {
		Release struct {
			Operation string
			Revision  int
		}
	}
	if err := json.Unmarshal(doc.Releases[1].Plan, &added); err != nil || added.Release.Operation != "install" || added.Release.Revision != 1 {
		t.Errorf("new HelmRelease: release %+v (%v), want the install of revision 1", added.Release, err)
	}

	out, errOut, code = execute(t, "helm-safe-upgrade", "gitops", base, base, "--detailed-exitcode")
	if code != ExitOK || !strings.Contains(out, "No HelmRelease or Application renders differently") {
		t.Errorf("same checkout: exit %d, want 0 and no plan\n%s\n%s", code, out, errOut)
	}
}

// TestGitOpsLiveRefusesOfflineTarget: --live plans against the cluster's
// own version; an offline target with it is bad input, before any file is
// read.
func TestGitOpsLiveRefusesOfflineTarget(t *testing.T) {
	_, errOut, code := execute(t, "helm-safe-upgrade", "gitops", "base", "head", "--live", "--kube-version", "1.36.0")
	if code != ExitError || !strings.Contains(errOut, "with --live, the cluster's own are used") {
		t.Errorf("exit %d, want 1 naming the flags\n%s", code, errOut)
	}
}

// TestGitOpsRepositoryTextEscaped: a file path of the repository (the
// title, the notes) reaches the report and stderr escaped, in every
// format a terminal or a CI log shows: a line break in it forges no line
// (no GitHub Actions workflow command), an ESC sets no colour.
func TestGitOpsRepositoryTextEscaped(t *testing.T) {
	url, _ := chartrepo.Serve(t, demo, demoV2, chartrepo.WebChart(t))
	base, head := gitopsRepo(t, url, nil)
	forged := "apps/shop\n::error title=injected::x\x1b[31m.yaml"
	if err := os.Rename(filepath.Join(head, "apps/shop.yaml"), filepath.Join(head, forged)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		args          []string
		githubActions bool
	}{
		{"text", nil, false},
		{"markdown", []string{"-o", "markdown"}, false},
		{"markdown in GitHub Actions", []string{"-o", "markdown"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.githubActions {
				t.Setenv("GITHUB_ACTIONS", "true")
			}
			out, errOut, code := execute(t, "helm-safe-upgrade", append([]string{"gitops", base, head}, tc.args...)...)
			if code != ExitBlocked {
				t.Fatalf("exit %d, want 2\n%s\n%s", code, errOut, out)
			}
			if !strings.Contains(out, `apps/shop\n::error title=injected::x\x1b[31m.yaml`) {
				t.Errorf("the file is not named, escaped:\n%s", out)
			}
			for _, line := range strings.Split(out+errOut, "\n") {
				if strings.HasPrefix(line, "::error title=injected") || strings.Contains(line, "\x1b") {
					t.Errorf("raw repository text: %q", line)
				}
			}
		})
	}
}
