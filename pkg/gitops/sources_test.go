package gitops

import (
	"encoding/base64"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/filetree"
)

// selfRepository is the GitRepository of the checkout itself.
const selfRepository = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: self, namespace: apps}\nspec: {url: \"https://git.example.com/repo\"}\n"

const webChart = "apiVersion: v2\nname: web\nversion: 1.0.0\n"

// resolveIn loads files and resolves the object ref of them.
func resolveIn(t *testing.T, files map[string]string, ref ObjectRef) (*Side, *Release, error) {
	t.Helper()
	s := writeSide(t, files)
	d := s.find(ref.Kind, ref.Namespace, ref.Name)
	if d == nil {
		t.Fatalf("%s not loaded", ref)
	}
	r, err := s.Resolve(d)
	return s, r, err
}

// wantError fails t unless err says each of want.
func wantError(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one saying %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

var webRelease = ObjectRef{Kind: KindHelmRelease, Namespace: "apps", Name: "web"}

// TestValuesFiles: source-controller's valuesFiles replace the chart's
// values.yaml with their merge, values.yaml counting only when listed; for
// a chart of a HelmRepository they are files of the chart (read once it is
// fetched), for one of a GitRepository files of the repository.
func TestValuesFiles(t *testing.T) {
	chartFiles := map[string]string{
		"charts/web/Chart.yaml":  webChart,
		"charts/web/values.yaml": "a: chart\nb: chart\nkeep: chart\n",
		"charts/web/prod.yaml":   "b: prod\nc: prod\n",
		"charts/web/extra.yaml":  "c: extra\n",
		"env/prod.yaml":          "b: repo\n",
	}
	for _, tc := range []struct {
		name, chartSpec string
		want            map[string]interface{}
		wantErr         []string // at resolution or fetch
	}{
		{"in the chart, values.yaml not listed", `{chart: web, sourceRef: {kind: HelmRepository, name: charts}, valuesFiles: [prod.yaml, extra.yaml]}`,
			map[string]interface{}{"b": "prod", "c": "extra"}, nil},
		{"in the chart, values.yaml listed first", `{chart: web, sourceRef: {kind: HelmRepository, name: charts}, valuesFiles: [values.yaml, prod.yaml]}`,
			map[string]interface{}{"a": "chart", "b": "prod", "c": "prod", "keep": "chart"}, nil},
		{"in the chart, one missing", `{chart: web, sourceRef: {kind: HelmRepository, name: charts}, valuesFiles: [prod.yaml, absent.yaml]}`,
			nil, []string{"HelmRelease apps/web (", "/hr.yaml:", "spec.chart.spec.valuesFiles[1]: absent.yaml: not in chart web 1.0.0"}},
		{"in the chart, missing ignored", `{chart: web, sourceRef: {kind: HelmRepository, name: charts}, valuesFiles: [absent.yaml, prod.yaml], ignoreMissingValuesFiles: true}`,
			map[string]interface{}{"b": "prod", "c": "prod"}, nil},
		{"in the repository", `{chart: ./charts/web, sourceRef: {kind: GitRepository, name: self}, valuesFiles: [charts/web/values.yaml, env/prod.yaml]}`,
			map[string]interface{}{"a": "chart", "b": "repo", "keep": "chart"}, nil},
		{"in the repository, missing", `{chart: ./charts/web, sourceRef: {kind: GitRepository, name: self}, valuesFiles: [env/absent.yaml]}`,
			nil, []string{"HelmRelease apps/web (", "/hr.yaml:", "spec.chart.spec.valuesFiles[0]: env/absent.yaml: not in the checkout"}},
		{"in the repository, out of it", `{chart: ./charts/web, sourceRef: {kind: GitRepository, name: self}, valuesFiles: [../../etc/passwd]}`,
			nil, []string{"spec.chart.spec.valuesFiles[0]: ../../etc/passwd", "outside the checkout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"hr.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: apps}
spec: {url: "https://charts.example.com"}
---
` + selfRepository + `---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  chart:
    spec: ` + tc.chartSpec + "\n"}
			for k, v := range chartFiles {
				files[k] = v
			}
			s, r, err := resolveIn(t, files, webRelease)
			if err == nil {
				if r.ValuesFiles == nil {
					t.Fatal("valuesFiles not read")
				}
				// The test's chart of the "repository" is the local one.
				r.Chart = Chart{Path: filepath.Join(s.Root, "charts/web")}
				var path string
				if path, err = r.FetchChart(cli.New(), t.TempDir(), "head", 0); err == nil {
					ch, lerr := loader.Load(path)
					if lerr != nil {
						t.Fatal(lerr)
					}
					if !reflect.DeepEqual(ch.Values, tc.want) {
						t.Errorf("chart values %v, want %v", ch.Values, tc.want)
					}
				}
			}
			if tc.wantErr == nil && err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != nil {
				wantError(t, err, tc.wantErr...)
			}
		})
	}
}

// TestHelmChartRef: a spec.chartRef of kind HelmChart is resolved like
// spec.chart.spec, from the HelmChart object of the files.
func TestHelmChartRef(t *testing.T) {
	release := "---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: web, namespace: apps}\nspec:\n  chartRef: {kind: HelmChart, name: web-chart}\n"
	helmChart := func(spec string) string {
		return "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmChart\nmetadata: {name: web-chart, namespace: apps}\nspec:\n" + spec
	}
	repo := "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: charts, namespace: apps}\nspec: {url: \"https://charts.example.com\"}\n"
	t.Run("HelmRepository chart with valuesFiles", func(t *testing.T) {
		_, r, err := resolveIn(t, map[string]string{"a.yaml": helmChart("  chart: web\n  version: 1.2.x\n  sourceRef: {kind: HelmRepository, name: charts}\n  valuesFiles: [values.yaml, prod.yaml]\n") + repo + release}, webRelease)
		if err != nil {
			t.Fatal(err)
		}
		want := Chart{RepoURL: "https://charts.example.com", Name: "web", Version: "1.2.x", Via: "HelmRepository apps/charts"}
		if r.Chart != want || r.ValuesFiles == nil || !reflect.DeepEqual(r.ValuesFiles.Paths, []string{"values.yaml", "prod.yaml"}) || r.ValuesFiles.item(1) != "spec.valuesFiles[1]" {
			t.Errorf("chart %+v valuesFiles %+v", r.Chart, r.ValuesFiles)
		}
	})
	for _, tc := range []struct {
		name, files string
		want        []string
	}{
		{"HelmChart not in the files", repo + release, []string{"HelmRelease apps/web", "spec.chartRef: HelmChart apps/web-chart is not in the files"}},
		{"HelmChart without chart", helmChart("  sourceRef: {kind: HelmRepository, name: charts}\n") + repo + release, []string{"HelmChart apps/web-chart (", "/a.yaml:", "spec.chart: missing"}},
		{"Bucket source", helmChart("  chart: web\n  sourceRef: {kind: Bucket, name: b}\n") + "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: Bucket\nmetadata: {name: b, namespace: apps}\nspec: {bucketName: x}\n" + release,
			[]string{"HelmChart apps/web-chart", "spec.sourceRef.kind: a Bucket source is not supported"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := resolveIn(t, map[string]string{"a.yaml": tc.files}, webRelease)
			wantError(t, err, tc.want...)
		})
	}
}

// TestOCIRepositoryRef: the chart an OCIRepository pins, with
// source-controller's precedence: digest, semver, tag, "latest".
func TestOCIRepositoryRef(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, ref string
		want      Chart
		wantErr   string
	}{
		{"digest over tag and semver", "{digest: " + digest + ", tag: 1.0.0, semver: 1.x}", Chart{Name: "oci://r.example.com/web@" + digest}, ""},
		{"semver over tag", "{semver: 1.x, tag: 1.0.0}", Chart{Name: "oci://r.example.com/web", Version: "1.x"}, ""},
		{"tag", "{tag: stable}", Chart{Name: "oci://r.example.com/web", Tag: "stable"}, ""},
		{"none: latest", "{}", Chart{Name: "oci://r.example.com/web", Tag: "latest"}, ""},
		{"not a digest", "{digest: abc}", Chart{}, `spec.ref.digest: "abc" is not a digest`},
		{"semverFilter", "{semver: 1.x, semverFilter: '.*-rc'}", Chart{}, "spec.ref.semverFilter: not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, r, err := resolveIn(t, map[string]string{"a.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata: {name: web, namespace: apps}\nspec: {url: \"oci://r.example.com/web\", ref: " + tc.ref + "}\n---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: web, namespace: apps}\nspec:\n  chartRef: {kind: OCIRepository, name: web}\n"}, webRelease)
			if tc.wantErr != "" {
				wantError(t, err, "OCIRepository apps/web (", "/a.yaml:", tc.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Via = "OCIRepository apps/web"
			if r.Chart != tc.want {
				t.Errorf("chart %+v, want %+v", r.Chart, tc.want)
			}
		})
	}
}

// TestFileParameters: Argo CD's helm.fileParameters are --set-file, after
// the parameters (every --set before any --set-string), each path in the
// chart's directory or, from "/", the repository's root, never out of it;
// a parameter's comma stays in its value unless the value is a {…} list.
func TestFileParameters(t *testing.T) {
	app := func(helm string) map[string]string {
		return map[string]string{"charts/web/Chart.yaml": webChart, "charts/web/files/motd.txt": "hello, world\n", "shared/ca.pem": "PEM", "app.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  destination: {namespace: web}
  source:
    repoURL: https://git.example.com/repo
    path: charts/web
    helm:
` + helm}
	}
	ref := ObjectRef{Kind: KindApplication, Namespace: "argocd", Name: "web"}
	for _, tc := range []struct {
		name, helm string
		want       map[string]interface{}
		wantErr    []string
	}{
		{"files and parameters", `      parameters:
        - {name: tag, value: "1", forceString: true}
        - {name: tag, value: "2"}
        - {name: motd, value: overwritten}
      fileParameters:
        - {name: motd, path: files/motd.txt}
        - {name: tls.ca, path: /shared/ca.pem}
`, map[string]interface{}{"tag": "1", "motd": "hello, world\n", "tls": map[string]interface{}{"ca": "PEM"}}, nil},
		{"plain comma", `      parameters: [{name: hosts, value: "a.example.com,b=c"}]
`, map[string]interface{}{"hosts": "a.example.com,b=c"}, nil},
		{"comma already escaped", `      parameters: [{name: hosts, value: 'a\,b,c'}]
`, map[string]interface{}{"hosts": "a,b,c"}, nil},
		{"braces list", `      parameters: [{name: hosts, value: "{a,b}"}, {name: note, value: "a,{b}"}]
`, map[string]interface{}{"hosts": []interface{}{"a", "b"}, "note": "a,{b}"}, nil},
		{"forceString", `      parameters: [{name: ports, value: "80,443", forceString: true}]
`, map[string]interface{}{"ports": "80,443"}, nil},
		{"missing file", "      fileParameters: [{name: a, path: files/absent.txt}]\n", nil, []string{"Application argocd/web (", "/app.yaml:", "spec.source.helm.fileParameters[0].path: files/absent.txt: not in the checkout"}},
		{"out of the checkout", "      fileParameters: [{name: a, path: ../../../../etc/hostname}]\n", nil, []string{"spec.source.helm.fileParameters[0].path: ", "outside the checkout"}},
		{"no name", "      fileParameters: [{path: files/motd.txt}]\n", nil, []string{"spec.source.helm.fileParameters[0]: name and path are required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, r, err := resolveIn(t, app(tc.helm), ref)
			if tc.wantErr != nil {
				wantError(t, err, tc.wantErr...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(r.Values, tc.want) {
				t.Errorf("values %#v, want %#v", r.Values, tc.want)
			}
		})
	}
}

// TestKustomizationBuild: the objects under a Flux Kustomization's path
// take its targetNamespace and its postBuild substitution, as
// kustomize-controller builds them.
func TestKustomizationBuild(t *testing.T) {
	ks := func(postBuild string) string {
		return `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  path: ./apps
  sourceRef: {kind: GitRepository, name: flux-system}
  targetNamespace: prod
` + postBuild
	}
	vars := `apiVersion: v1
kind: ConfigMap
metadata: {name: cluster-vars, namespace: flux-system}
data: {REGION: eu-west-1, VERSION: "0.9.0"}
---
apiVersion: v1
kind: Secret
metadata: {name: cluster-secrets, namespace: flux-system}
data: {TOKEN: ` + base64.StdEncoding.EncodeToString([]byte("tok-3f9a\n")) + `}
`
	release := `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  chart: {spec: {chart: web, version: "${VERSION}", sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}}}
  values:
    region: ${REGION}
    token: ${TOKEN}
    replicas: ${REPLICAS:=2}
    port: "${PORT:=8080}"
    unset: "${UNSET}"
`
	ref := ObjectRef{Kind: KindHelmRelease, Namespace: "prod", Name: "web"}
	for _, tc := range []struct {
		name, postBuild, release string
		check                    func(t *testing.T, s *Side, r *Release)
		wantErr                  []string
	}{
		{"substitute over substituteFrom", `  postBuild:
    substitute: {VERSION: 1.0.0}
    substituteFrom:
      - {kind: ConfigMap, name: cluster-vars}
      - {kind: Secret, name: cluster-secrets}
      - {kind: Secret, name: absent, optional: true}
`, release, func(t *testing.T, s *Side, r *Release) {
			want := map[string]interface{}{"region": "eu-west-1", "token": "tok-3f9a", "replicas": float64(2), "port": "8080", "unset": ""}
			if !reflect.DeepEqual(r.Values, want) || r.Chart.Version != "1.0.0" || r.Namespace != "prod" || r.Name != "web" {
				t.Errorf("values %#v chart %s release %s/%s", r.Values, r.Chart, r.Namespace, r.Name)
			}
			if len(r.Sources) != 2 {
				t.Errorf("sources %d: want the ConfigMap and the Secret", len(r.Sources))
			}
			if got := s.SecretValues(); len(got) != 1 || string(got[0]) != "tok-3f9a" {
				t.Errorf("secret values %q: want the Secret's value without its line break", got)
			}
		}, nil},
		{"no variables: nothing substituted", "", strings.Replace(release, `"${VERSION}"`, "1.0.0", 1), func(t *testing.T, _ *Side, r *Release) {
			if r.Values["region"] != "${REGION}" || r.Namespace != "prod" {
				t.Errorf("values %v namespace %s", r.Values, r.Namespace)
			}
		}, nil},
		{"substitution disabled", "  postBuild: {substitute: {REGION: x}}\n",
			strings.Replace(strings.Replace(release, "metadata: {name: web, namespace: apps}", "metadata:\n  name: web\n  namespace: apps\n  annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}", 1), `"${VERSION}"`, "1.0.0", 1),
			func(t *testing.T, _ *Side, r *Release) {
				if r.Values["region"] != "${REGION}" {
					t.Errorf("values %v: want them as written", r.Values)
				}
			}, nil},
		{"missing ConfigMap", "  postBuild:\n    substituteFrom: [{kind: ConfigMap, name: absent}]\n", release, nil,
			[]string{"Kustomization flux-system/apps (", "/ks.yaml:", "spec.postBuild.substituteFrom[0]: ConfigMap flux-system/absent is not in the files"}},
		{"bad variable name", "  postBuild:\n    substitute: {1X: a}\n", release, nil, []string{"Kustomization flux-system/apps", `spec.postBuild: variable "1X"`}},
		{"SOPS-encrypted Secret", "  postBuild:\n    substituteFrom: [{kind: Secret, name: sealed}]\n", release, nil,
			[]string{"spec.postBuild.substituteFrom[0]: Secret flux-system/sealed (", "/vars.yaml:", "is encrypted with SOPS"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"clusters/ks.yaml": ks(tc.postBuild), "clusters/vars.yaml": vars + sopsSecret, "clusters/repo.yaml": helmRepository, "apps/web.yaml": tc.release}
			s, err := Load(filetree.Write(t, files))
			if err == nil && tc.check != nil {
				d := s.find(ref.Kind, ref.Namespace, ref.Name)
				if d == nil {
					t.Fatalf("%s not built", ref)
				}
				var r *Release
				if r, err = s.Resolve(d); err == nil {
					tc.check(t, s, r)
				}
			}
			if tc.wantErr == nil && err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != nil {
				wantError(t, err, tc.wantErr...)
			}
		})
	}
}

const sopsSecret = `---
apiVersion: v1
kind: Secret
metadata: {name: sealed, namespace: flux-system}
data:
  TOKEN: ENC[AES256_GCM,data:abc,type:str]
sops:
  mac: ENC[AES256_GCM,data:xyz,type:str]
  version: 3.9.0
`

// TestSOPSValuesFromRefused: a valuesFrom Secret encrypted with SOPS is
// named, with that it is encrypted.
func TestSOPSValuesFromRefused(t *testing.T) {
	_, _, err := resolveIn(t, map[string]string{"repo.yaml": helmRepository, "s.yaml": strings.ReplaceAll(sopsSecret, "flux-system", "apps"), "hr.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  chart: {spec: {chart: web, sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}}}
  valuesFrom: [{kind: Secret, name: sealed, valuesKey: TOKEN}]
`}, webRelease)
	wantError(t, err, "HelmRelease apps/web (", "/hr.yaml:", "spec.valuesFrom[0]: Secret apps/sealed (", "/s.yaml:2) is encrypted with SOPS")
}

// TestLoadSkipsCharts: a chart of the checkout (a GitRepository's path) is
// templates, not manifests: Load does not read them as objects.
func TestLoadSkipsCharts(t *testing.T) {
	s := writeSide(t, map[string]string{"charts/web/Chart.yaml": webChart,
		"charts/web/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
		"hr.yaml":                      selfRepository})
	if len(s.Docs) != 1 || s.Docs[0].Ref.Kind != "GitRepository" {
		t.Errorf("docs %v: want the GitRepository only", s.Docs)
	}
}

// TestKustomizationPathAndSource: a Kustomization's path may not leave the
// checkout, and one whose source is not a GitRepository (an OCIRepository
// built elsewhere) changes nothing.
func TestKustomizationPathAndSource(t *testing.T) {
	ks := func(path, kind string) string {
		return "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system}\nspec:\n  path: " + path + "\n  sourceRef: {kind: " + kind + ", name: src}\n  targetNamespace: prod\n"
	}
	for _, tc := range []struct {
		name, ks string
		wantNS   string
		wantErr  []string
	}{
		{"path out of the checkout", ks("../..", "GitRepository"), "", []string{"Kustomization flux-system/apps (", "/ks.yaml:5): spec.path: ", "outside the checkout"}},
		{"OCIRepository source", ks("./apps", "OCIRepository"), "apps", nil},
		{"GitRepository source", ks("./apps", "GitRepository"), "prod", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Load(filetree.Write(t, map[string]string{"ks.yaml": tc.ks, "apps/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vals, namespace: apps}\n"}))
			if tc.wantErr != nil {
				wantError(t, err, tc.wantErr...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.find("ConfigMap", tc.wantNS, "vals") == nil {
				t.Errorf("docs %v: want the ConfigMap in %s", s.Docs, tc.wantNS)
			}
		})
	}
}
