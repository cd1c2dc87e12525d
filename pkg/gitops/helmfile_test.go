package gitops

import (
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/filetree"
)

// TestHelmfileRenderChart: the chart a helmfile release is planned with
// renders, through Helm's engine, exactly the text helmfile template
// wrote, file by file in path order ({{ in a value stays as it is).
func TestHelmfileRenderChart(t *testing.T) {
	out := filetree.Write(t, map[string]string{
		"web_/web/web/templates/b.yaml": "---\n# Source: web/templates/b.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {tmpl: \"{{ .Values.x }} and {{- raw }}\"}\n",
		"web_/web/web/templates/a.yaml": "---\n# Source: web/templates/a.yaml\napiVersion: v1\nkind: Service\nmetadata: {name: a}\n",
	})
	var total int64
	manifest, found, err := readRender(filepath.Join(out, "web_", "web"), &total)
	if err != nil || !found {
		t.Fatalf("readRender: %v %v", found, err)
	}
	if strings.Index(manifest, "kind: Service") > strings.Index(manifest, "kind: ConfigMap") {
		t.Errorf("files not in path order:\n%s", manifest)
	}
	r := &HelmfileRelease{Environment: "prod", Name: "web", Namespace: "web", Chart: "repo/web", Version: "~1.2", Installed: true, Manifest: manifest, Rendered: true}
	rel, err := r.Release(t.TempDir(), "helmfile.yaml", 3)
	if err != nil {
		t.Fatal(err)
	}
	if rel.Object.String() != "HelmfileRelease web/web@prod" || rel.Name != "web" || rel.Namespace != "web" {
		t.Errorf("release %+v", rel)
	}
	ch, err := loader.Load(rel.Chart.Path)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Metadata.Version != "0.0.0" || ch.Name() != "web" {
		t.Errorf("chart %s %s: want web 0.0.0 (a constraint is no version)", ch.Name(), ch.Metadata.Version)
	}
	vals, err := chartutil.ToRenderValues(ch, map[string]interface{}{}, chartutil.ReleaseOptions{Name: "web", Namespace: "web", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		t.Fatal(err)
	}
	if got := files["web/templates/helmfile-render.yaml"]; got != manifest {
		t.Errorf("rendered\n%s\nwant\n%s", got, manifest)
	}
	if _, found, err := readRender(filepath.Join(out, "none"), &total); found || err != nil {
		t.Errorf("a release helmfile did not render: %v %v", found, err)
	}
}

func TestHelmfileLineAndDetection(t *testing.T) {
	dir := filetree.Write(t, map[string]string{"helmfile.yaml": "releases:\n  - name: db\n    chart: x\n  - chart: y\n    name: \"web\"  # the front\n"})
	if l := HelmfileLine(filepath.Join(dir, "helmfile.yaml"), "web"); l != 5 {
		t.Errorf("line %d, want 5", l)
	}
	if l := HelmfileLine(filepath.Join(dir, "helmfile.yaml"), "we"); l != 1 {
		t.Errorf("a prefix matched: line %d", l)
	}
	if !HasHelmfile(dir, HelmfileOptions{}) || HasHelmfile(t.TempDir(), HelmfileOptions{}) || HasHelmfile(dir, HelmfileOptions{File: "other.yaml"}) {
		t.Errorf("detection")
	}
	t.Setenv(HelmfileEnv, "")
	t.Setenv("PATH", t.TempDir())
	if _, err := HelmfileBinary(HelmfileOptions{}); err == nil || !strings.Contains(err.Error(), "--helmfile, "+HelmfileEnv) {
		t.Errorf("no helmfile: %v", err)
	}
	t.Setenv(HelmfileEnv, "/opt/helmfile")
	if b, _ := HelmfileBinary(HelmfileOptions{}); b != "/opt/helmfile" {
		t.Errorf("env: %s", b)
	}
	if b, _ := HelmfileBinary(HelmfileOptions{Binary: "/x/helmfile"}); b != "/x/helmfile" {
		t.Errorf("flag: %s", b)
	}
}

func TestBoundedBuffer(t *testing.T) {
	head := &boundedBuffer{max: 4}
	head.Write([]byte("abc"))
	head.Write([]byte("def"))
	tail := &boundedBuffer{max: 4, keepTail: true}
	tail.Write([]byte("abc"))
	tail.Write([]byte("def"))
	if !head.over || head.String() != "abc" || tail.String() != "cdef" {
		t.Errorf("head %q %v, tail %q", head.String(), head.over, tail.String())
	}
}
