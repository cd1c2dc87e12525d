package render

import (
	"context"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/helmtest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
)

// TestHideSecretStaysOutOfTheRender: Helm's action would replace every
// Secret of the manifest by a comment; the plan would then see them deleted.
func TestHideSecretStaysOutOfTheRender(t *testing.T) {
	o := Options{HideSecret: true} // --hide-secret (parsed: pkg/cli's TestRenderFlagsParse)
	cfg := new(action.Configuration)
	if o.NewUpgrade(cfg, relNS).HideSecret || o.NewInstall(cfg, relName, relNS).HideSecret {
		t.Error("HideSecret reached Helm's action")
	}
	f := newFixture(t)
	f.seed(t, chartDir, release.StatusDeployed)
	o.Namespace, o.Timeout = relNS, DefaultTimeout
	res, err := Render(context.Background(), f.cfg, helmtest.Settings(t), relName, chartDir, o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Next.Manifest, "kind: Secret") || strings.Contains(res.Next.Manifest, "HIDDEN") {
		t.Errorf("the render lost its Secret:\n%s", res.Next.Manifest)
	}
}

// TestRenderLabelsNotesDependencies renders with the flags that change the
// render itself: labels on the release record, subchart notes, and a
// dependency that is only there after --dependency-update.
func TestRenderLabelsNotesDependencies(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"parent/Chart.yaml":          "apiVersion: v2\nname: parent\nversion: 0.1.0\ndependencies:\n- name: sub\n  version: 0.1.0\n  repository: file://../sub\n",
		"parent/templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-parent\n",
		"parent/templates/NOTES.txt": "parent notes\n",
		"sub/Chart.yaml":             "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"sub/templates/cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-sub\n",
		"sub/templates/NOTES.txt":    "sub notes\n",
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	parent := filepath.Join(root, "parent")
	f := newFixture(t)
	f.seed(t, chartDir, release.StatusDeployed)
	settings := helmtest.Settings(t)

	opts := baseOptions()
	if _, err := Render(context.Background(), f.cfg, settings, relName, parent, opts); err == nil || !strings.Contains(err.Error(), "--dependency-update") {
		t.Fatalf("missing dependency: err = %v", err)
	}
	opts.DependencyUpdate = true
	opts.SubNotes = true
	opts.Labels = map[string]string{"team": "db"}
	res, err := Render(context.Background(), f.cfg, settings, relName, parent, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Next.Manifest, "name: app-sub") {
		t.Errorf("the subchart is not rendered:\n%s", res.Next.Manifest)
	}
	if !strings.Contains(res.Next.Info.Notes, "sub notes") {
		t.Errorf("--render-subchart-notes: notes = %q", res.Next.Info.Notes)
	}
	if res.Next.Labels["team"] != "db" {
		t.Errorf("--labels: release labels = %v", res.Next.Labels)
	}
	opts.SubNotes = false
	if res, err = Render(context.Background(), f.cfg, settings, relName, parent, opts); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Next.Info.Notes, "sub notes") {
		t.Errorf("without --render-subchart-notes: notes = %q", res.Next.Info.Notes)
	}
}
