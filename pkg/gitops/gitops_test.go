package gitops

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/filetree"
)

// writeSide writes files (relative path → content) under a new directory
// and loads it.
func writeSide(t *testing.T, files map[string]string) *Side {
	t.Helper()
	s, err := Load(filetree.Write(t, files))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const helmRepository = `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: charts
  namespace: flux-system
spec:
  url: https://charts.example.com
`

const podinfo = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: apps
spec:
  interval: 5m
  chart:
    spec:
      chart: podinfo
      version: 6.0.0
      sourceRef:
        kind: HelmRepository
        name: charts
        namespace: flux-system
  valuesFrom:
    - kind: ConfigMap
      name: podinfo-values
    - kind: Secret
      name: podinfo-secret
      valuesKey: password
      targetPath: auth.password
  values:
    replicaCount: 2
    image:
      tag: "6.0"
`

const podinfoValues = `apiVersion: v1
kind: ConfigMap
metadata:
  name: podinfo-values
  namespace: apps
data:
  values.yaml: |
    replicaCount: 1
    image:
      repository: ghcr.io/stefanprodan/podinfo
---
apiVersion: v1
kind: Secret
metadata:
  name: podinfo-secret
  namespace: apps
data:
  password: czNjcjN0   # s3cr3t
`

func TestResolveHelmRelease(t *testing.T) {
	s := writeSide(t, map[string]string{"infra/repo.yaml": helmRepository, "apps/podinfo.yaml": podinfo, "apps/values.yaml": podinfoValues})
	d := s.find(KindHelmRelease, "apps", "podinfo")
	if d == nil {
		t.Fatal("HelmRelease not loaded")
	}
	r, err := s.Resolve(d)
	if err != nil {
		t.Fatal(err)
	}
	want := Chart{RepoURL: "https://charts.example.com", Name: "podinfo", Version: "6.0.0", Via: "HelmRepository flux-system/charts"}
	if r.Chart != want {
		t.Errorf("chart = %+v, want %+v", r.Chart, want)
	}
	wantValues := map[string]interface{}{
		"replicaCount": float64(2), // spec.values wins over valuesFrom, JSON numbers as the controller reads them
		"image":        map[string]interface{}{"repository": "ghcr.io/stefanprodan/podinfo", "tag": "6.0"},
		"auth":         map[string]interface{}{"password": "s3cr3t"},
	}
	if !reflect.DeepEqual(r.Values, wantValues) {
		t.Errorf("values = %#v\nwant %#v", r.Values, wantValues)
	}
	if r.Name != "podinfo" || r.Namespace != "apps" || r.StorageNamespace != "apps" || len(r.Sources) != 2 {
		t.Errorf("release %s/%s storage %s sources %d", r.Namespace, r.Name, r.StorageNamespace, len(r.Sources))
	}
	if !r.SkipsCRDs(false) || r.SkipsCRDs(true) {
		t.Errorf("CRD policy: helm-controller skips crds/ on upgrade and creates them on install by default")
	}
}

func TestDefaultReleaseName(t *testing.T) {
	long := strings.Repeat("a", 30)
	for _, tc := range []struct{ target, name, want string }{
		{"", "podinfo", "podinfo"},
		{"prod", "podinfo", "prod-podinfo"},
		{"", strings.Repeat("x", 53), strings.Repeat("x", 53)},
		// helm-controller's release.ShortenName: 40 characters, "-", 12 of the SHA-256.
		{long, long, (long + "-" + long)[:40] + "-" + fmt.Sprintf("%x", sha256.Sum256([]byte(long+"-"+long)))[:12]},
	} {
		if got := DefaultReleaseName(tc.target, tc.name); got != tc.want {
			t.Errorf("DefaultReleaseName(%q, %q) = %q, want %q", tc.target, tc.name, got, tc.want)
		}
	}
}

func TestResolveSources(t *testing.T) {
	chartYAML := "apiVersion: v2\nname: web\nversion: 1.0.0\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		ref   ObjectRef
		check func(t *testing.T, root string, r *Release)
	}{
		{
			name: "OCI HelmRepository",
			files: map[string]string{"a.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: oci, namespace: apps}
spec: {type: oci, url: "oci://registry.example.com/charts", insecure: true}
---
apiVersion: helm.toolkit.fluxcd.io/v2beta2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  targetNamespace: prod
  storageNamespace: helm
  chart: {spec: {chart: web, version: "1.x", sourceRef: {kind: HelmRepository, name: oci}}}
`},
			ref: ObjectRef{Kind: KindHelmRelease, Namespace: "apps", Name: "web"},
			check: func(t *testing.T, _ string, r *Release) {
				if r.Chart.Name != "oci://registry.example.com/charts/web" || r.Chart.Version != "1.x" || !r.Chart.PlainHTTP || r.Chart.RepoURL != "" {
					t.Errorf("chart %+v", r.Chart)
				}
				if r.Name != "prod-web" || r.Namespace != "prod" || r.StorageNamespace != "helm" {
					t.Errorf("release %s/%s storage %s", r.Namespace, r.Name, r.StorageNamespace)
				}
			},
		},
		{
			name: "GitRepository path",
			files: map[string]string{"charts/web/Chart.yaml": chartYAML, "a.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: self, namespace: flux-system}
spec: {url: "https://git.example.com/repo"}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  releaseName: site
  upgrade: {crds: CreateReplace}
  chart: {spec: {chart: ./charts/web, sourceRef: {kind: GitRepository, name: self, namespace: flux-system}}}
`},
			ref: ObjectRef{Kind: KindHelmRelease, Namespace: "apps", Name: "web"},
			check: func(t *testing.T, root string, r *Release) {
				if r.Chart.Path != filepath.Join(root, "charts/web") || r.Name != "site" || r.SkipsCRDs(false) {
					t.Errorf("chart %+v name %s skips CRDs %v", r.Chart, r.Name, r.SkipsCRDs(false))
				}
			},
		},
		{
			name: "chartRef OCIRepository",
			files: map[string]string{"a.yaml": `apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: OCIRepository
metadata: {name: web, namespace: apps}
spec: {url: "oci://ghcr.io/acme/charts/web", ref: {tag: 2.1.0}}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  chartRef: {kind: OCIRepository, name: web}
`},
			ref: ObjectRef{Kind: KindHelmRelease, Namespace: "apps", Name: "web"},
			check: func(t *testing.T, _ string, r *Release) {
				if r.Chart.Name != "oci://ghcr.io/acme/charts/web" || r.Chart.Tag != "2.1.0" || r.Chart.Version != "" {
					t.Errorf("chart %+v", r.Chart)
				}
			},
		},
		{
			name: "Application of a chart repository",
			files: map[string]string{"app.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: cache, namespace: argocd}
spec:
  destination: {namespace: cache, server: https://kubernetes.default.svc}
  source:
    repoURL: https://charts.example.com
    chart: redis
    targetRevision: 1.2.3
    helm:
      releaseName: redis-main
      values: |
        replicas: 1
        image: {tag: "7"}
      valuesObject:
        replicas: 3
      parameters:
        - {name: image.tag, value: "7.2"}
        - {name: port, value: "6379", forceString: true}
`},
			ref: ObjectRef{Kind: KindApplication, Namespace: "argocd", Name: "cache"},
			check: func(t *testing.T, _ string, r *Release) {
				want := map[string]interface{}{"replicas": float64(3), "image": map[string]interface{}{"tag": "7.2"}, "port": "6379"}
				if !reflect.DeepEqual(r.Values, want) {
					t.Errorf("values = %#v, want %#v (valuesObject over values, parameters last)", r.Values, want)
				}
				if r.Chart.RepoURL != "https://charts.example.com" || r.Chart.Name != "redis" || r.Name != "redis-main" || r.Namespace != "cache" || len(r.PostRenderers) != 0 {
					t.Errorf("release %+v", r)
				}
			},
		},
		{
			name: "Application of a path, value files, $ref",
			files: map[string]string{"charts/web/Chart.yaml": chartYAML, "charts/web/prod.yaml": "a: 1\nb: 1\n", "env/prod.yaml": "b: 2\n", "app.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  destination: {namespace: web}
  sources:
    - {repoURL: https://git.example.com/repo, ref: values}
    - repoURL: https://git.example.com/repo
      path: charts/web
      helm:
        valueFiles: [prod.yaml, $values/env/prod.yaml]
`},
			ref: ObjectRef{Kind: KindApplication, Namespace: "argocd", Name: "web"},
			check: func(t *testing.T, root string, r *Release) {
				want := map[string]interface{}{"a": float64(1), "b": float64(2)}
				if !reflect.DeepEqual(r.Values, want) || r.Chart.Path != filepath.Join(root, "charts/web") {
					t.Errorf("values = %#v chart %+v", r.Values, r.Chart)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := writeSide(t, tc.files)
			d := s.find(tc.ref.Kind, tc.ref.Namespace, tc.ref.Name)
			if d == nil {
				t.Fatalf("%s not loaded", tc.ref)
			}
			r, err := s.Resolve(d)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, s.Root, r)
		})
	}
}

func TestResolveErrors(t *testing.T) {
	release := func(spec string) string {
		return "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: web, namespace: apps}\n" + spec
	}
	chart := "  chart: {spec: {chart: web, version: 1.0.0, sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}}}\n"
	for _, tc := range []struct {
		name, doc string
		want      []string // in the error
	}{
		{"no spec", release(""), []string{"HelmRelease apps/web", "hr.yaml:1", "spec: missing"}},
		{"no chart", release("spec:\n  interval: 5m\n"), []string{"HelmRelease apps/web", "spec.chart: missing"}},
		{"chart not a map", release("spec:\n  chart: web\n"), []string{"spec.chart: want a map"}},
		{"no chart name", release("spec:\n  chart: {spec: {sourceRef: {kind: HelmRepository, name: charts}}}\n"), []string{"spec.chart.spec.chart: missing"}},
		{"source not in the files", release("spec:\n  chart: {spec: {chart: web, sourceRef: {kind: HelmRepository, name: elsewhere}}}\n"), []string{"spec.chart.spec.sourceRef", "HelmRepository apps/elsewhere is not in the files"}},
		{"missing ConfigMap", release("spec:\n" + chart + "  valuesFrom:\n    - kind: ConfigMap\n      name: absent\n"), []string{"HelmRelease apps/web", "hr.yaml:", "spec.valuesFrom", "spec.valuesFrom[0]: ConfigMap apps/absent is not in the files"}},
		{"missing key", release("spec:\n"+chart+"  valuesFrom:\n    - {kind: ConfigMap, name: vals, valuesKey: other.yaml}\n") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: vals, namespace: apps}\ndata: {values.yaml: 'a: 1'}\n", []string{"ConfigMap apps/vals has no key \"other.yaml\""}},
		{"chart valuesFiles not paths", release("spec:\n  chart: {spec: {chart: web, valuesFiles: [{a: 1}], sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}}}\n"), []string{"hr.yaml:5", "spec.chart.spec.valuesFiles[0]: want a path"}},
		{"Bucket source", release("spec:\n  chart: {spec: {chart: web, sourceRef: {kind: Bucket, name: b}}}\n") + "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: Bucket\nmetadata: {name: b, namespace: apps}\nspec: {bucketName: charts}\n", []string{"HelmRelease apps/web", "spec.chart.spec.sourceRef.kind: a Bucket source is not supported"}},
		{"values not a map", release("spec:\n" + chart + "  values: [1, 2]\n"), []string{"spec.values: want a map"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := writeSide(t, map[string]string{"repo.yaml": helmRepository, "hr.yaml": tc.doc})
			_, err := Changes(&Side{Root: s.Root}, s)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestOptionalValuesFromMissing(t *testing.T) {
	s := writeSide(t, map[string]string{"repo.yaml": helmRepository, "hr.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  chart: {spec: {chart: web, sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}}}
  valuesFrom: [{kind: Secret, name: absent, optional: true}]
`})
	r, err := s.Resolve(s.find(KindHelmRelease, "apps", "web"))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "Secret apps/absent") {
		t.Errorf("notes %q: want the optional Secret named", r.Notes)
	}
}

func TestChangesPairAndLocate(t *testing.T) {
	cm := strings.Replace(podinfoValues, "replicaCount: 1", "replicaCount: 1", 1)
	base := writeSide(t, map[string]string{"repo.yaml": helmRepository, "apps/podinfo.yaml": podinfo, "apps/values.yaml": cm,
		"apps/gone.yaml": strings.Replace(podinfo, "name: podinfo\n  namespace: apps", "name: gone\n  namespace: apps", 1)})
	head := writeSide(t, map[string]string{"repo.yaml": helmRepository,
		"apps/podinfo.yaml":   strings.Replace(strings.Replace(podinfo, "version: 6.0.0", "version: 6.1.0", 1), "interval: 5m", "interval: 10m", 1),
		"apps/values.yaml":    cm,
		"apps/unchanged.yaml": strings.Replace(podinfo, "name: podinfo\n  namespace: apps", "name: same\n  namespace: apps", 1),
	})
	// "same" is new in the head; add it to the base too so it is unchanged.
	base.Docs = append(base.Docs, head.find(KindHelmRelease, "apps", "same"))
	changes, err := Changes(base, head)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range changes {
		got = append(got, c.Ref.Name)
	}
	if !reflect.DeepEqual(got, []string{"gone", "podinfo"}) {
		t.Fatalf("changes %v, want gone (removed) and podinfo (version)", got)
	}
	if changes[0].Head != nil || changes[0].Base == nil {
		t.Errorf("gone: want a removal")
	}
	// The interval changed first (line 7) but renders nothing: the
	// location is the first changed line, the interval's, in the head file.
	if c := changes[1]; filepath.Base(c.File) != "podinfo.yaml" || c.Line != 7 {
		t.Errorf("podinfo located at %s:%d, want podinfo.yaml:7", c.File, c.Line)
	}
}

func TestChangeLocatedInValuesSource(t *testing.T) {
	base := writeSide(t, map[string]string{"repo.yaml": helmRepository, "apps/podinfo.yaml": podinfo, "apps/values.yaml": podinfoValues})
	head := writeSide(t, map[string]string{"repo.yaml": helmRepository, "apps/podinfo.yaml": podinfo,
		"apps/values.yaml": strings.Replace(podinfoValues, "ghcr.io/stefanprodan/podinfo", "ghcr.io/acme/podinfo", 1)})
	changes, err := Changes(base, head)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || filepath.Base(changes[0].File) != "values.yaml" || changes[0].Line != 10 {
		t.Fatalf("changes %+v: want podinfo, located at the changed line of the ConfigMap's values (values.yaml:10)", changes)
	}
}

func TestPostRenderers(t *testing.T) {
	s := writeSide(t, map[string]string{"repo.yaml": helmRepository, "hr.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  chart: {spec: {chart: web, sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}}}
  postRenderers:
    - kustomize:
        patches:
          - target: {kind: Deployment, name: web}
            patch: |
              - op: add
                path: /spec/template/spec/priorityClassName
                value: critical
        images:
          - {name: nginx, newTag: "1.27"}
`})
	r, err := s.Resolve(s.find(KindHelmRelease, "apps", "web"))
	if err != nil {
		t.Fatal(err)
	}
	in := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
        - name: web
          image: nginx:1.25
`
	out, err := Renderer(r.PostRenderers).Run(bytes.NewBufferString(in))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"priorityClassName: critical", "image: nginx:1.27", "helm.toolkit.fluxcd.io/name: web", "helm.toolkit.fluxcd.io/namespace: apps"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("post-rendered manifest lacks %q:\n%s", want, out)
		}
	}
}

func TestLoadRefusesBadYAML(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("a: [1,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("error %v: want the file named", err)
	}
}

// TestChangesOfChartInRepository: a chart of the checkout itself (a
// GitRepository path) is planned when any file of it changes, not because
// the two checkouts are two directories.
func TestChangesOfChartInRepository(t *testing.T) {
	files := func(template string) map[string]string {
		return map[string]string{
			"charts/web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 1.0.0\n", "charts/web/templates/cm.yaml": template,
			"hr.yaml": selfRepository + `---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  chart: {spec: {chart: ./charts/web, sourceRef: {kind: GitRepository, name: self}}}
`}
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: \"1\"}\n"
	for _, tc := range []struct {
		name     string
		head     string
		wantPlan bool
	}{
		{"same chart", cm, false},
		{"a template changes", strings.Replace(cm, `"1"`, `"2"`, 1), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changes, err := Changes(writeSide(t, files(cm)), writeSide(t, files(tc.head)))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(changes) == 1; got != tc.wantPlan {
				t.Errorf("planned: %v, want %v (%+v)", got, tc.wantPlan, changes)
			}
		})
	}
}

// TestPathsStayInTheCheckout: the paths a pull request's objects name (a
// chart, a value file) and the YAML files read may not lead out of the
// checkout, by "..", or by a link.
func TestPathsStayInTheCheckout(t *testing.T) {
	outside := filetree.Write(t, map[string]string{"chart/Chart.yaml": "apiVersion: v2\nname: x\nversion: 1.0.0\n", "secret.yaml": "token: abc\n"})
	app := func(source string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: argocd}\nspec:\n  destination: {namespace: web}\n  source:\n" + source
	}
	for _, tc := range []struct {
		name  string
		files func(root string) map[string]string
		want  string
	}{
		{"chart path with ..", func(root string) map[string]string {
			rel, _ := filepath.Rel(root, filepath.Join(outside, "chart"))
			return map[string]string{"app.yaml": app("    path: " + filepath.ToSlash(rel) + "\n    helm: {}\n")}
		}, "spec.source.path: "},
		{"value file with ..", func(root string) map[string]string {
			rel, _ := filepath.Rel(root, filepath.Join(outside, "secret.yaml"))
			return map[string]string{"charts/web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 1.0.0\n",
				"app.yaml": app("    path: charts/web\n    helm: {valueFiles: [\"$values/" + filepath.ToSlash(rel) + "\"]}\n")}
		}, "spec.source.helm.valueFiles[0]: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "checkout")
			if err := os.MkdirAll(root, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, body := range tc.files(root) {
				p := filepath.Join(root, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s, err := Load(root)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Changes(&Side{Root: root}, s)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "outside the checkout") {
				t.Errorf("error %v: want %q … outside the checkout", err, tc.want)
			}
		})
	}
	t.Run("linked YAML file", func(t *testing.T) {
		root := filetree.Write(t, map[string]string{"a.yaml": "kind: x\n"})
		if err := os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(root, "b.yaml")); err != nil {
			t.Skip("no symbolic links here:", err)
		}
		if _, err := Load(root); err == nil || !strings.Contains(err.Error(), "outside the checkout") {
			t.Errorf("error %v: want the link refused", err)
		}
	})
}
