package render

import (
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
)

func TestMention(t *testing.T) {
	for _, tc := range []struct {
		text, want string
	}{
		{"", ""},
		{"plain: text\n", ""},
		{`{{ .Values.name | quote }}`, ""},
		{`{{ include "x.fullname" . }}-{{ .Release.Revision }}`, ""},
		{`{{ randAlphaNum 16 }}`, "randAlphaNum"},
		{`{{randAlpha 3}}`, "randAlpha"},
		{`{{- $ca := genCA "ca" 365 }}`, "genCA"},
		{`{{ genSelfSignedCertWithKey "a" nil nil 3 $k }}`, "genSelfSignedCertWithKey"},
		{`at: {{ now | date "2006" }}`, "now"},
		{`{{ date "2006" "not a time" }}`, "date"},
		{`{{ uuidv4 }}`, "uuidv4"},
		{`{{ (lookup "v1" "Secret" "ns" "s").data }}`, "lookup"},
		{`{{ range keys .Values.m }}{{ . }}{{ end }}`, "keys"},
		{`{{ values .Values.m | toJson }}`, "values"},
		{`{{ getHostByName "example.com" }}`, "getHostByName"},
		{`{{ printf "%p" .Values }}`, "%p"},
		// Words, not substrings: these name no such function.
		{`{{ .Values.nowhere }} {{ .Values.randomSeed }} {{ .Values.keysFile }} {{ .Values.updated }}`, ""},
		{`{{ .Values.Keys }} {{ .Values.Values }}`, ""},
		// Even in comments and plain text (tpl can make text a template).
		{`{{/* now */}}`, "now"},
		{"# rotated now and then\n", "now"},
	} {
		if got := mention(tc.text); got != tc.want {
			t.Errorf("mention(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestNondeterministic(t *testing.T) {
	file := func(name, data string) *chart.File { return &chart.File{Name: name, Data: []byte(data)} }
	newChart := func(name string, templates ...*chart.File) *chart.Chart {
		return &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: name, Version: "1.0.0"},
			Templates: templates, Values: map[string]interface{}{"image": "nginx"}}
	}
	plain := file("templates/cm.yaml", "kind: ConfigMap\ndata: {a: {{ .Values.image | quote }}}\n")
	for _, tc := range []struct {
		name string
		res  func() *Result
		opts Options
		want string // a substring of the reason; "" means deterministic
	}{
		{name: "deterministic chart and values", res: func() *Result {
			return &Result{Chart: newChart("app", plain), Values: map[string]interface{}{"image": "redis"},
				Next: &release.Release{Config: map[string]interface{}{"image": "redis"}}}
		}},
		{name: "a template", want: `templates/secret.yaml in chart app mentions "randAlphaNum"`, res: func() *Result {
			return &Result{Chart: newChart("app", plain, file("templates/secret.yaml", "{{ randAlphaNum 8 }}"))}
		}},
		{name: "a subchart's template", want: `templates/t.yaml in chart sub mentions "now"`, res: func() *Result {
			ch := newChart("app", plain)
			ch.AddDependency(newChart("sub", file("templates/t.yaml", "{{ now }}")))
			return &Result{Chart: ch}
		}},
		{name: "a file tpl can evaluate", want: `files/conf.tpl in chart app mentions "uuidv4"`, res: func() *Result {
			ch := newChart("app", plain)
			ch.Files = []*chart.File{file("files/conf.tpl", "id: {{ uuidv4 }}")}
			return &Result{Chart: ch}
		}},
		{name: "the chart's values", want: `the values of chart app mention "genCA"`, res: func() *Result {
			ch := newChart("app", plain)
			ch.Values["ca"] = map[string]interface{}{"tpl": []interface{}{"{{ genCA \"x\" 3 }}"}}
			return &Result{Chart: ch}
		}},
		{name: "a subchart's values as chartutil.Values", want: `the values of chart sub mention "shuffle"`, res: func() *Result {
			ch := newChart("app", plain)
			sub := newChart("sub")
			sub.Values = chartutil.Values{"s": chartutil.Values{"x": "{{ shuffle \"abc\" }}"}}
			ch.AddDependency(sub)
			return &Result{Chart: ch}
		}},
		{name: "the user's values (--set)", want: `the values mention "randInt"`, res: func() *Result {
			return &Result{Chart: newChart("app", plain), Values: map[string]interface{}{"x": "{{ randInt 1 9 }}"}}
		}},
		{name: "the stored values (--reuse-values)", want: `the values mention "lookup"`, res: func() *Result {
			return &Result{Chart: newChart("app", plain),
				Next: &release.Release{Config: map[string]interface{}{"list": []interface{}{map[string]interface{}{"t": "{{ lookup \"v1\" \"Pod\" \"\" \"\" }}"}}}}}
		}},
		{name: "a key of the values", want: `the values mention "htpasswd"`, res: func() *Result {
			return &Result{Chart: newChart("app", plain), Values: map[string]interface{}{"htpasswd": true}}
		}},
		{name: "a value of another type", want: `the values mention "bcrypt"`, res: func() *Result {
			return &Result{Chart: newChart("app", plain), Values: map[string]interface{}{"m": map[string]string{"a": "{{ bcrypt \"x\" }}"}}}
		}},
		{name: "chart metadata", want: `Chart.yaml of chart app mentions "now"`, res: func() *Result {
			ch := newChart("app", plain)
			ch.Metadata.Description = "{{ now }}"
			return &Result{Chart: ch}
		}},
		{name: "a post-renderer", opts: Options{PostRenderer: "./kustomize.sh"}, want: "post-renderer", res: func() *Result {
			return &Result{Chart: newChart("app", plain)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Nondeterministic(tc.res(), tc.opts)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("Nondeterministic = %q, want %q", got, tc.want)
			}
		})
	}
}
