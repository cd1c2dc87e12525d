package render

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/cli"
)

// writeChart writes a chart directory with Chart.yaml, values.yaml and the
// given templates; chartYAML extra lines go into Chart.yaml.
func writeTestChart(t *testing.T, version, chartExtra, values string, templates map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "c")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "templates"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte("apiVersion: v2\nname: c\nversion: "+version+"\n"+chartExtra), 0o644))
	must(os.WriteFile(filepath.Join(dir, "values.yaml"), []byte(values), 0o644))
	for name, body := range templates {
		must(os.WriteFile(filepath.Join(dir, "templates", name), []byte(body), 0o644))
	}
	return dir
}

func TestOfflineTarget(t *testing.T) {
	tg, err := (&Options{}).OfflineTarget()
	if err != nil {
		t.Fatal(err)
	}
	if tg.Minor != 37 || tg.Capabilities.KubeVersion.Version != "v1.37.0" || tg.Capabilities.KubeVersion.Minor != "37" {
		t.Fatalf("default target = 1.%d, %+v", tg.Minor, tg.Capabilities.KubeVersion)
	}
	caps := tg.Capabilities.APIVersions
	if !caps.Has("policy/v1") || caps.Has("policy/v1beta1") || caps.Has("batch/v1beta1") || !caps.Has("apps/v1") {
		t.Fatalf("1.37 API versions: policy/v1 %v policy/v1beta1 %v batch/v1beta1 %v", caps.Has("policy/v1"), caps.Has("policy/v1beta1"), caps.Has("batch/v1beta1"))
	}
	tg, err = (&Options{KubeVersion: "1.24.0", APIVersions: []string{"monitoring.coreos.com/v1", "example.com/v1/Widget"}}).OfflineTarget()
	if err != nil {
		t.Fatal(err)
	}
	caps = tg.Capabilities.APIVersions
	if tg.Minor != 24 || tg.Capabilities.KubeVersion.Version != "v1.24.0" || !caps.Has("policy/v1beta1") || !caps.Has("monitoring.coreos.com/v1") || !caps.Has("example.com/v1/Widget") {
		t.Fatalf("1.24 target: %+v %v", tg.Capabilities.KubeVersion, caps)
	}
	if _, err := (&Options{KubeVersion: "banana"}).OfflineTarget(); err == nil || !strings.Contains(err.Error(), "invalid kube version 'banana'") {
		t.Fatalf("bad version: %v", err)
	}
}

const capsTemplate = `apiVersion: v1
kind: ConfigMap
metadata: {name: caps}
data:
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  pdb: {{ if .Capabilities.APIVersions.Has "policy/v1beta1" }}policy/v1beta1{{ else }}policy/v1{{ end }}
`

func TestRenderOfflineKubeVersion(t *testing.T) {
	base := writeTestChart(t, "1.0.0", "", "", map[string]string{"cm.yaml": capsTemplate})
	head := writeTestChart(t, "2.0.0", "kubeVersion: \">=1.25.0-0\"\n", "", map[string]string{"cm.yaml": capsTemplate})
	render := func(kubeVersion string) (*Result, error) {
		o := Options{Namespace: relNS, Install: true, KubeVersion: kubeVersion}
		tg, err := o.OfflineTarget()
		if err != nil {
			t.Fatal(err)
		}
		return RenderOffline(context.Background(), cli.New(), relName, Base{Chart: base}, head, o, tg)
	}
	res, err := render("")
	if err != nil {
		t.Fatalf("kubeVersion >=1.25.0-0 without --kube-version: %v", err)
	}
	for _, want := range []string{`kube: "v1.37.0"`, "pdb: policy/v1\n"} {
		if !strings.Contains(res.Next.Manifest, want) {
			t.Errorf("head manifest lacks %q:\n%s", want, res.Next.Manifest)
		}
	}
	_, err = render("1.24.0")
	if err == nil || !strings.Contains(err.Error(), "chart requires kubeVersion: >=1.25.0-0 which is incompatible with Kubernetes v1.24.0") {
		t.Fatalf("--kube-version 1.24.0: err = %v, want Helm's refusal", err)
	}
	if !strings.Contains(err.Error(), "head chart") {
		t.Errorf("error does not say which chart: %v", err)
	}
}

const upgradeTemplate = `apiVersion: v1
kind: ConfigMap
metadata: {name: up}
data:
  isUpgrade: {{ .Release.IsUpgrade | quote }}
  isInstall: {{ .Release.IsInstall | quote }}
  revision: {{ .Release.Revision | quote }}
  color: {{ .Values.color | quote }}
  size: {{ .Values.size | quote }}
`

// TestRenderOfflineUpgrade: the head is an upgrade of the base release, with
// Helm's values semantics against the base's values.
func TestRenderOfflineUpgrade(t *testing.T) {
	base := writeTestChart(t, "1.0.0", "", "color: red\nsize: s\n", map[string]string{"cm.yaml": upgradeTemplate})
	head := writeTestChart(t, "2.0.0", "", "color: blue\nsize: m\n", map[string]string{"cm.yaml": upgradeTemplate,
		"check.yaml": `{{ if and .Release.IsUpgrade (not .Values.password) }}{{ fail "you must provide your current password when upgrading" }}{{ end }}`})
	baseValues := filepath.Join(t.TempDir(), "base.yaml")
	if err := os.WriteFile(baseValues, []byte("color: green\npassword: s3cret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	headValues := filepath.Join(t.TempDir(), "head.yaml")
	if err := os.WriteFile(headValues, []byte("size: xl\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		opts   func(*Options)
		want   []string
		errMsg string
	}{
		{name: "no values: Helm reuses the base's values when none are given", opts: func(*Options) {},
			want: []string{`isUpgrade: "true"`, `isInstall: "false"`, `revision: "2"`, `color: "green"`, `size: "m"`}},
		{name: "new values without --reuse-values: the base's are dropped", opts: func(o *Options) { o.Values.ValueFiles = []string{headValues} },
			errMsg: "you must provide your current password when upgrading"},
		{name: "--reuse-values", opts: func(o *Options) { o.Values.ValueFiles = []string{headValues}; o.ReuseValues = true },
			want: []string{`color: "green"`, `size: "xl"`}},
		{name: "--reset-then-reuse-values", opts: func(o *Options) { o.Values.ValueFiles = []string{headValues}; o.ResetThenReuseValues = true },
			want: []string{`color: "green"`, `size: "xl"`}},
		{name: "--reset-values", opts: func(o *Options) { o.ResetValues = true },
			errMsg: "you must provide your current password when upgrading"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{Namespace: relNS, Install: true}
			tt.opts(&o)
			tg, err := o.OfflineTarget()
			if err != nil {
				t.Fatal(err)
			}
			res, err := RenderOffline(context.Background(), cli.New(), relName, Base{Chart: base, Values: []string{baseValues}}, head, o, tg)
			if tt.errMsg != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errMsg) {
					t.Fatalf("err = %v, want %q", err, tt.errMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Install || res.Previous == nil || res.Previous.Version != 1 || res.Next.Version != 2 {
				t.Fatalf("not an upgrade of revision 1: install %v previous %v next %d", res.Install, res.Previous, res.Next.Version)
			}
			if !strings.Contains(res.Previous.Manifest, `isInstall: "true"`) || !strings.Contains(res.Previous.Manifest, `color: "green"`) {
				t.Errorf("base not rendered as an install with its values:\n%s", res.Previous.Manifest)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Next.Manifest, w) {
					t.Errorf("head manifest lacks %s:\n%s", w, res.Next.Manifest)
				}
			}
		})
	}
}

func TestRenderOfflineFromManifest(t *testing.T) {
	head := writeTestChart(t, "2.0.0", "", "color: blue\nsize: m\n", map[string]string{"cm.yaml": upgradeTemplate})
	manifest := "---\n# Source: c/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: up}\ndata: {color: red}\n"
	o := Options{Namespace: relNS, Install: true, ReuseValues: true}
	tg, err := o.OfflineTarget()
	if err != nil {
		t.Fatal(err)
	}
	res, err := RenderOffline(context.Background(), cli.New(), relName, Base{Manifest: manifest}, head, o, tg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Previous.Manifest != manifest || !strings.Contains(res.Next.Manifest, `isUpgrade: "true"`) || !strings.Contains(res.Next.Manifest, `color: "blue"`) {
		t.Fatalf("previous %q\nnext %s", res.Previous.Manifest, res.Next.Manifest)
	}
}

// passwordTemplate keeps a generated password across upgrades through
// lookup and refuses an upgrade that cannot find it, as Bitnami's charts do.
const passwordTemplate = `{{- $s := lookup "v1" "Secret" .Release.Namespace .Values.secretName }}
{{- if and .Release.IsUpgrade (not $s) (not .Values.password) }}{{ fail "PASSWORDS ERROR: You must provide your current passwords when upgrading the release." }}{{ end }}
apiVersion: v1
kind: Secret
metadata: {name: {{ .Values.secretName }}}
data:
  password: {{ if $s }}{{ index $s.data "password" }}{{ else }}{{ randAlphaNum 16 | b64enc }}{{ end }}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: seen}
data:
  namespace: {{ (lookup "v1" "Namespace" "" .Release.Namespace).metadata.name | quote }}
  configMaps: {{ len (lookup "v1" "ConfigMap" .Release.Namespace "").items | quote }}
  managedBy: {{ if $s }}{{ index $s.metadata.labels "app.kubernetes.io/managed-by" | quote }}{{ else }}""{{ end }}
  missing: {{ lookup "example.com/v1" "Widget" .Release.Namespace "w" | len | quote }}
`

// TestRenderOfflineLookup: the head's lookup sees the base release's objects.
func TestRenderOfflineLookup(t *testing.T) {
	base := writeTestChart(t, "1.0.0", "", "secretName: auth\n", map[string]string{"secret.yaml": passwordTemplate})
	head := writeTestChart(t, "2.0.0", "", "secretName: auth\n", map[string]string{"secret.yaml": passwordTemplate})
	renamed := writeTestChart(t, "2.0.0", "", "secretName: credentials\n", map[string]string{"secret.yaml": passwordTemplate})
	o := Options{Namespace: relNS, Install: true}
	tg, err := o.OfflineTarget()
	if err != nil {
		t.Fatal(err)
	}
	res, err := RenderOffline(context.Background(), cli.New(), relName, Base{Chart: base}, head, o, tg)
	if err != nil {
		t.Fatalf("upgrade with the base's Secret in place: %v", err)
	}
	password := func(m string) string {
		i := strings.Index(m, "password: ")
		return strings.SplitN(m[i:], "\n", 2)[0]
	}
	if password(res.Next.Manifest) != password(res.Previous.Manifest) {
		t.Errorf("generated password not kept through lookup: %s vs %s", password(res.Previous.Manifest), password(res.Next.Manifest))
	}
	for _, want := range []string{`namespace: "` + relNS + `"`, `configMaps: "1"`, `managedBy: "Helm"`, `missing: "0"`} {
		if !strings.Contains(res.Next.Manifest, want) {
			t.Errorf("head manifest lacks %s:\n%s", want, res.Next.Manifest)
		}
	}
	if !strings.Contains(res.Previous.Manifest, `configMaps: "0"`) {
		t.Errorf("the base's lookup saw objects:\n%s", res.Previous.Manifest)
	}
	_, err = RenderOffline(context.Background(), cli.New(), relName, Base{Chart: base}, renamed, o, tg)
	if err == nil || !strings.Contains(err.Error(), "You must provide your current passwords when upgrading") {
		t.Fatalf("renamed Secret: err = %v, want the chart's refusal", err)
	}
}
