package gitops

import (
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/filetree"
)

// TestNamesRefused: a name the API server or Helm would refuse, of an
// object read or one it refers to, is an error naming the file and the
// field, its value quoted: a line break or a terminal control in it never
// reaches a report or a CI log (a forged ::error workflow command).
func TestNamesRefused(t *testing.T) {
	release := func(meta, spec string) string {
		return "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n" + meta + "spec:\n  chart: {spec: {chart: web, sourceRef: {kind: HelmRepository, name: charts, namespace: flux-system}}}\n" + spec
	}
	web := "  name: web\n  namespace: apps\n"
	app := func(meta, spec string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n" + meta + "spec:\n  source: {repoURL: https://charts.example.com, chart: web, targetRevision: 1.0.0" + spec + "}\n  destination:\n    namespace: \"web\\n::error title=x::y\"\n"
	}
	for _, tc := range []struct {
		name, doc string
		want      []string // in the error; none: loaded and resolved
	}{
		{"release name", release("  name: \"web\\n::error title=injected::x\"\n  namespace: apps\n", ""),
			[]string{"hr.yaml:4: HelmRelease metadata.name: \"web\\n::error title=injected::x\" is not a valid name"}},
		{"release namespace", release("  name: web\n  namespace: \"apps\\e[31m\"\n", ""), []string{"hr.yaml:5: HelmRelease metadata.namespace: \"apps\\x1b[31m\""}},
		{"ConfigMap name", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \"vals\\a\", namespace: apps}\n", []string{"hr.yaml:3: ConfigMap metadata.name: \"vals\\a\""}},
		{"valuesFrom name", release(web, "  valuesFrom: [{kind: ConfigMap, name: \"vals\\n::error::x\"}]\n"), []string{"HelmRelease apps/web (", "spec.valuesFrom[0].name: \"vals\\n::error::x\" is not a valid name"}},
		{"sourceRef name", strings.Replace(release(web, ""), "name: charts", "name: \"charts\\r\"", 1), []string{"spec.chart.spec.sourceRef.name: \"charts\\r\""}},
		{"chartRef namespace", release(web, "")[:strings.Index(release(web, ""), "  chart:")] + "  chartRef: {kind: OCIRepository, name: web, namespace: \"Flux System\"}\n", []string{"spec.chartRef.namespace: \"Flux System\""}},
		{"targetNamespace", release(web, "  targetNamespace: \"prod\\n\"\n"), []string{"spec.targetNamespace: \"prod\\n\""}},
		{"storageNamespace", release(web, "  storageNamespace: \"a\\tb\"\n"), []string{"spec.storageNamespace: \"a\\tb\""}},
		{"releaseName", release(web, "  releaseName: \"web\\e]0;x\\a\"\n"), []string{"spec.releaseName: \"web\\x1b]0;x\\a\"", "invalid release name"}},
		{"Application destination namespace", app("  name: web\n  namespace: argocd\n", ""), []string{"Application argocd/web (", "spec.destination.namespace: \"web\\n::error title=x::y\""}},
		{"Application releaseName", strings.Replace(app("  name: web\n  namespace: argocd\n", ", helm: {releaseName: \"a\\nb\"}"), "\"web\\n::error title=x::y\"", "web", 1), []string{"spec.source.helm.releaseName: \"a\\nb\""}},
		{"Kustomization targetNamespace", "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system}\nspec: {path: ./, sourceRef: {kind: GitRepository, name: flux-system}, targetNamespace: \"prod\\e\"}\n", []string{"Kustomization flux-system/apps (", "spec.targetNamespace: \"prod\\x1b\""}},
		{"a kind not read keeps its name", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: \"system:web\"}\n", nil},
		{"valid names", release(web, "  releaseName: web.v2\n  targetNamespace: prod\n  storageNamespace: flux-system\n"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Load(filetree.Write(t, map[string]string{"repo.yaml": helmRepository, "hr.yaml": tc.doc}))
			if err == nil {
				_, err = Changes(&Side{Root: s.Root}, s)
			}
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantError(t, err, tc.want...)
			if strings.ContainsAny(err.Error(), "\n\r\x1b\a") {
				t.Errorf("error %q holds a control character", err)
			}
		})
	}
}
