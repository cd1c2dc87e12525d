package render

import (
	"context"
	"github.com/safe-upgrade/helm-safe-upgrade/internal/helmtest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
)

// TestHelmUpgradeFlagsReachTheAction parses each flag of helm upgrade v3.22
// that changes the render or the apply and checks that it reaches Helm's
// upgrade action and, where `helm upgrade --install` passes it on, the
// install action.
func TestHelmUpgradeFlagsReachTheAction(t *testing.T) {
	tests := []struct {
		args    []string
		upgrade func(*action.Upgrade) bool
		// install is nil where cmd/helm/upgrade.go does not pass the flag
		// to the install of `helm upgrade --install`.
		install func(*action.Install) bool
	}{
		{[]string{"--recreate-pods"}, func(u *action.Upgrade) bool { return u.Recreate }, nil},
		{[]string{"--disable-openapi-validation"},
			func(u *action.Upgrade) bool { return u.DisableOpenAPIValidation },
			func(i *action.Install) bool { return i.DisableOpenAPIValidation }},
		{[]string{"--wait-for-jobs"},
			func(u *action.Upgrade) bool { return u.WaitForJobs },
			func(i *action.Install) bool { return i.WaitForJobs }},
		{[]string{"--history-max", "3"}, func(u *action.Upgrade) bool { return u.MaxHistory == 3 }, nil},
		{[]string{"--cleanup-on-fail"}, func(u *action.Upgrade) bool { return u.CleanupOnFail }, nil},
		{[]string{"--render-subchart-notes"},
			func(u *action.Upgrade) bool { return u.SubNotes },
			func(i *action.Install) bool { return i.SubNotes }},
		{[]string{"--hide-notes"},
			func(u *action.Upgrade) bool { return u.HideNotes },
			func(i *action.Install) bool { return i.HideNotes }},
		{[]string{"-l", "team=db,tier=null"},
			func(u *action.Upgrade) bool { return u.Labels["team"] == "db" && u.Labels["tier"] == "null" },
			func(i *action.Install) bool { return i.Labels["team"] == "db" && i.Labels["tier"] == "null" }},
		{[]string{"--labels", "team=db"},
			func(u *action.Upgrade) bool { return u.Labels["team"] == "db" },
			func(i *action.Install) bool { return i.Labels["team"] == "db" }},
		{[]string{"--dependency-update"},
			func(u *action.Upgrade) bool { return u.DependencyUpdate },
			func(i *action.Install) bool { return i.DependencyUpdate }},
		{[]string{"--enable-dns"},
			func(u *action.Upgrade) bool { return u.EnableDNS },
			func(i *action.Install) bool { return i.EnableDNS }},
		{[]string{"--take-ownership"},
			func(u *action.Upgrade) bool { return u.TakeOwnership },
			func(i *action.Install) bool { return i.TakeOwnership }},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var o Options
			fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			cfg := new(action.Configuration)
			if up := o.NewUpgrade(cfg, relNS); !tt.upgrade(up) {
				t.Errorf("not on the upgrade action: %+v", up)
			}
			if tt.install != nil && !tt.install(o.NewInstall(cfg, relName, relNS)) {
				t.Errorf("not on the install action")
			}
			// Unset, none of them is on.
			var zero Options
			if tt.upgrade(zero.NewUpgrade(cfg, relNS)) {
				t.Errorf("on the upgrade action without the flag")
			}
		})
	}
}

// TestHideSecretStaysOutOfTheRender: Helm's action would replace every
// Secret of the manifest by a comment; the plan would then see them deleted.
func TestHideSecretStaysOutOfTheRender(t *testing.T) {
	var o Options
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--hide-secret"}); err != nil {
		t.Fatal(err)
	}
	if !o.HideSecret {
		t.Fatal("--hide-secret not parsed")
	}
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

func TestHistoryMaxDefault(t *testing.T) {
	for env, want := range map[string]int{"": 10, "4": 4, "0": 0} {
		if env == "" {
			os.Unsetenv("HELM_MAX_HISTORY")
		} else {
			t.Setenv("HELM_MAX_HISTORY", env)
		}
		var o Options
		o.AddFlags(pflag.NewFlagSet("x", pflag.ContinueOnError))
		if o.MaxHistory != want {
			t.Errorf("HELM_MAX_HISTORY=%q: --history-max defaults to %d, want %d", env, o.MaxHistory, want)
		}
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
