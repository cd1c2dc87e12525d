package gitops

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/filetree"
)

// TestLinksStayInTheCheckout: Helm's loader and the digest follow every
// link of a chart of the checkout, and the values files are read through
// theirs: a link leading out of the checkout (to a file, a directory, by a
// chain) is refused naming it and the field, whatever exists out there; a
// link inside is followed, and one back to a directory holding it refused.
func TestLinksStayInTheCheckout(t *testing.T) {
	outside := filetree.Write(t, map[string]string{"secret.yaml": "token: abc\n", "dir/secret.yaml": "token: abc\n"})
	release := func(chart string) string {
		return selfRepository + "---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: web, namespace: apps}\nspec:\n  chart: {spec: {chart: ./charts/web, sourceRef: {kind: GitRepository, name: self}" + chart + "}}\n"
	}
	app := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: apps}\nspec:\n  destination: {namespace: web}\n  source:\n    path: charts/web\n    helm:\n"
	const hrField, appField = "spec.chart.spec.chart: ", "spec.source.path: "
	for _, tc := range []struct {
		name  string
		doc   string
		links map[string]string // name → target; OUT is the directory outside
		want  []string          // "" when resolved
	}{
		{"file out", release(""), map[string]string{"charts/web/token": "OUT/secret.yaml"},
			[]string{hrField, "charts/web/token is a symbolic link leading outside the checkout"}},
		{"directory out", release(""), map[string]string{"charts/web/files": "OUT/dir"},
			[]string{hrField, "charts/web/files is a symbolic link leading outside"}},
		{"root directory", release(""), map[string]string{"charts/web/files": "/"},
			[]string{hrField, "charts/web/files is a symbolic link leading outside"}},
		{"chain out", release(""), map[string]string{"charts/web/token": "../../hop", "hop": "OUT/secret.yaml"},
			[]string{hrField, "charts/web/token is a symbolic link leading outside"}},
		{"out to nothing", release(""), map[string]string{"charts/web/token": "OUT/missing"},
			[]string{hrField, "charts/web/token is a symbolic link leading outside the checkout, or a broken one"}},
		{"a link of a nested directory", release(""), map[string]string{"charts/web/files/deep/token": "OUT/secret.yaml"},
			[]string{hrField, "charts/web/files/deep/token is a symbolic link"}},
		{"Argo CD path", app + "      releaseName: web\n", map[string]string{"charts/web/token": "OUT/secret.yaml"},
			[]string{appField, "charts/web/token is a symbolic link"}},
		{"cycle", release(""), map[string]string{"charts/web/loop": ".."},
			[]string{hrField, "charts/web/loop is a symbolic link to a directory holding it"}},
		{"chart directory out", release(""), map[string]string{"charts/web/templates": "OUT/dir"},
			[]string{hrField, "charts/web/templates is a symbolic link"}},
		{"valuesFiles through a linked directory", release(", valuesFiles: [values/secret.yaml]"), map[string]string{"values": "OUT/dir"},
			[]string{"spec.chart.spec.valuesFiles[0]: values/secret.yaml: values is a symbolic link"}},
		{"Argo CD valueFiles missing out there", app + "      ignoreMissingValueFiles: true\n      valueFiles: [$values/v/none.yaml]\n", map[string]string{"v": "OUT"},
			[]string{"spec.source.helm.valueFiles[0]: v is a symbolic link"}},
		{"Argo CD fileParameters", app + "      fileParameters: [{name: token, path: /p/secret.yaml}]\n", map[string]string{"p": "OUT"},
			[]string{"spec.source.helm.fileParameters[0].path: p is a symbolic link"}},
		{"links inside", release(", valuesFiles: [values/v.yaml]"), map[string]string{
			"charts/web/files": "../../shared", "charts/web/one": "../../shared/a.txt", "values": "shared"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filetree.Write(t, map[string]string{"charts/web/Chart.yaml": webChart, "charts/web/templates/cm.yaml": "kind: ConfigMap\n",
				"shared/a.txt": "a\n", "shared/v.yaml": "a: 1\n", "app.yaml": tc.doc})
			for name, target := range tc.links {
				filetree.Link(t, root, name, strings.Replace(target, "OUT", outside, 1))
			}
			s, err := Load(root)
			if err != nil {
				t.Fatal(err)
			}
			kind := KindHelmRelease
			if strings.Contains(tc.doc, "kind: Application") {
				kind = KindApplication
			}
			d := s.find(kind, "apps", "web")
			if d == nil {
				t.Fatal("no release loaded")
			}
			_, err = s.Resolve(d)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantError(t, err, tc.want...)
			if strings.Contains(err.Error(), outside) {
				t.Errorf("error %q tells the path outside", err)
			}
		})
	}
}

// TestChartOutsideNotTold: a chart path out of the checkout is refused
// alike whether or not it exists there.
func TestChartOutsideNotTold(t *testing.T) {
	outside := filetree.Write(t, map[string]string{"chart/Chart.yaml": webChart})
	var errs []string
	for _, dir := range []string{"chart", "none"} {
		root := filetree.Write(t, nil)
		rel, _ := filepath.Rel(root, filepath.Join(outside, dir))
		app := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: web, namespace: apps}\nspec:\n  destination: {namespace: web}\n  source:\n    path: " + filepath.ToSlash(rel) + "\n"
		if err := os.WriteFile(filepath.Join(root, "app.yaml"), []byte(app), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Load(root)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Resolve(s.find(KindApplication, "apps", "web"))
		wantError(t, err, "spec.source.path: ", "outside the checkout")
		errs = append(errs, strings.NewReplacer(s.Root, "ROOT", "/"+dir+"/", "/DIR/").Replace(err.Error()))
	}
	if errs[0] != errs[1] {
		t.Errorf("errors differ by what exists outside:\n%s\n%s", errs[0], errs[1])
	}
}
