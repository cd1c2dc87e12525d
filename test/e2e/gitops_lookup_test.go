package e2e

import (
	"encoding/base32"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/chartrepo"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/filetree"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// lookupCanary is the value of a Secret no pull request may read.
const lookupCanary = "victim-token-q8w2"

// lookupForms are what lookupChart prints of the canary: transformations
// a masker that knows the value cannot recognise, and the plain and
// base64 forms it can.
func lookupForms() map[string]string {
	letters := strings.Split(lookupCanary, "")
	reversed := slices.Clone(letters)
	slices.Reverse(reversed)
	return map[string]string{
		"plain":    lookupCanary,
		"base64":   base64.StdEncoding.EncodeToString([]byte(lookupCanary)),
		"upper":    strings.ToUpper(lookupCanary),
		"spaced":   strings.Join(letters, " "),
		"hex":      fmt.Sprintf("%x", lookupCanary),
		"base32":   base32.StdEncoding.EncodeToString([]byte(lookupCanary)),
		"invented": strings.Join(reversed, "."), // each letter, reversed, dotted
	}
}

// lookupChart is a chart at version whose ConfigMap prints, transformed,
// what `lookup` reads of Secret victim in namespace ns, by name and in a
// list of the namespace.
func lookupChart(t *testing.T, ns, version string) string {
	t.Helper()
	cm := `{{- $s := lookup "v1" "Secret" "` + ns + `" "victim" }}
{{- $v := "" }}{{- if $s }}{{- $v = index $s.data "token" | b64dec }}{{- end }}
{{- $listed := "" }}{{- range $i := (lookup "v1" "Secret" "` + ns + `" "").items }}{{- $listed = printf "%s%x" $listed (index $i.data "token" | default "" | b64dec) }}{{- end }}
apiVersion: v1
kind: ConfigMap
metadata: {name: leak}
data:
  version: "{{ .Chart.Version }}"
  plain: {{ $v | quote }}
  upper: {{ upper $v | quote }}
  spaced: {{ splitList "" $v | join " " | quote }}
  hex: {{ printf "%x" $v | quote }}
  base32: {{ b32enc $v | quote }}
  invented: {{ splitList "" $v | reverse | join "." | quote }}
  listed: {{ $listed | quote }}
`
	return writeChart(t, "leaky", version, map[string]string{"cm.yaml": cm})
}

// TestGitOpsLookupSecrets (issue 50): a pull request's chart that
// `lookup`s a Secret the CI job may read — by name and in a list — and
// prints it upper-cased, spelled out, in hex, base32 and a transformation
// the test invents, planned with gitops --live, puts no form of the value
// in any output (text, Markdown, SARIF, JSON, stderr, --debug): the lookup
// is answered "not found" and the plan says so. --lookup-secrets naming
// the namespace lets the chart read it, as helm-controller would.
func TestGitOpsLookupSecrets(t *testing.T) {
	c := testcluster.Get(t)
	target, victims := c.Namespace(t), c.Namespace(t)
	if _, err := c.Clientset(t).CoreV1().Secrets(victims).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "victim"}, StringData: map[string]string{"token": lookupCanary},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	url, _ := chartrepo.Serve(t, lookupChart(t, victims, "1.0.0"), lookupChart(t, victims, "2.0.0"))
	side := func(version string) string {
		return filetree.Write(t, map[string]string{
			"source.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: charts, namespace: flux}\nspec: {url: \"" + url + "\"}\n",
			"leaky.yaml": "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: leaky, namespace: flux}\nspec:\n" +
				"  releaseName: leaky\n  targetNamespace: " + target + "\n" +
				"  chart: {spec: {chart: leaky, version: " + version + ", sourceRef: {kind: HelmRepository, name: charts}}}\n",
		})
	}
	base, head := side("1.0.0"), side("2.0.0")
	for _, format := range []string{"text", "markdown", "sarif", "json"} {
		for _, debug := range []bool{false, true} {
			args := []string{"gitops", base, head, "--live", "-o", format}
			if debug {
				args = append(args, "--debug")
			}
			name := strings.Join(args[3:], " ")
			r := run(t, c, args...)
			if r.Code == 1 {
				t.Fatalf("%s: exit 1\n%s", name, r.Stderr)
			}
			for form, v := range lookupForms() {
				if strings.Contains(r.Stdout+r.Stderr, v) {
					t.Errorf("%s: the Secret's value, %s (%q), is in the output", name, form, v)
				}
			}
			if format != "sarif" && !strings.Contains(r.Stdout, `lookup of Secret `+victims+`/victim, `+victims+`/* was answered`) && !strings.Contains(r.Stdout, `lookup of Secret `+victims+`/victim, `+victims+`/\* was answered`) {
				t.Errorf("%s: the plan does not name the lookups answered \"not found\":\n%s", name, r.Stdout)
			}
		}
	}
	// Named, the namespace is read as helm-controller reads it: the
	// render differs (its plan shows the ConfigMap's values, the reviewer's
	// choice), and no note.
	r := run(t, c, "gitops", base, head, "--live", "-o", "json", "--lookup-secrets", victims)
	if r.Code == 1 || strings.Contains(r.Stdout, "was answered") {
		t.Errorf("--lookup-secrets %s: exit %d, or a lookup still refused\n%s\n%s", victims, r.Code, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stdout, lookupForms()["hex"]) {
		t.Errorf("--lookup-secrets %s: the chart did not read the Secret\n%s", victims, r.Stdout)
	}
	if r := run(t, c, "gitops", base, head, "--lookup-secrets", victims); r.Code != 1 || !strings.Contains(r.Stderr, "--lookup-secrets needs --live") {
		t.Errorf("--lookup-secrets offline: exit %d, want 1 saying it needs --live\n%s", r.Code, r.Stderr)
	}
}
