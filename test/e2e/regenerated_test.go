package e2e

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/helmtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

const genDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: gen}
spec:
  replicas: 1
  selector: {matchLabels: {app: gen}}
  template:
    metadata: {labels: {app: gen}}
    spec:
      containers:
      - name: app
        image: nginx:1.25
        %s
`

// TestRegeneratedCorpus (issue 26): a value generated on every render
// (randAlphaNum, genCA, now) is marked wherever the chart writes it, is not
// counted (re-planning the installed chart with --dry-run
// --detailed-exitcode exits 0) unless --fail-on-regenerated (exit 3), and a
// regenerated Secret value says the upgrade rotates it, without the value.
func TestRegeneratedCorpus(t *testing.T) {
	c := testcluster.Get(t)
	tests := []struct {
		name string
		// templates are the chart's files for the test namespace.
		templates  func(ns string) map[string]string
		kind, path string
		crd        bool // the chart ships a CRD (cluster-wide state)
	}{
		{name: "Secret stringData randAlphaNum", kind: "Secret", path: "data.password", templates: func(string) map[string]string {
			return map[string]string{"s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: gen}\nstringData: {password: {{ randAlphaNum 16 | quote }}, user: admin}\n"}
		}},
		{name: "Secret stringData genCA", kind: "Secret", path: "data[ca.crt]", templates: func(string) map[string]string {
			return map[string]string{"s.yaml": "{{- $ca := genCA \"gen-ca\" 365 }}\napiVersion: v1\nkind: Secret\nmetadata: {name: gen}\nstringData: {ca.crt: {{ $ca.Cert | quote }}}\n"}
		}},
		{name: "Secret data randAlphaNum", kind: "Secret", path: "data.password", templates: func(string) map[string]string {
			return map[string]string{"s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: gen}\ndata: {password: {{ randAlphaNum 16 | b64enc | quote }}}\n"}
		}},
		{name: "Secret annotation now", kind: "Secret", path: "metadata.annotations[rendered-at]", templates: func(string) map[string]string {
			return map[string]string{"s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: gen, annotations: {rendered-at: {{ now | quote }}}}\nstringData: {user: admin}\n"}
		}},
		{name: "ConfigMap label", kind: "ConfigMap", path: "metadata.labels.build", templates: func(string) map[string]string {
			return map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gen, labels: {build: {{ randAlphaNum 12 | quote }}}}\ndata: {level: info}\n"}
		}},
		{name: "ConfigMap data", kind: "ConfigMap", path: "data.token", templates: func(string) map[string]string {
			return map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gen}\ndata: {token: {{ randAlphaNum 16 | quote }}, level: info}\n"}
		}},
		{name: "ConfigMap binaryData", kind: "ConfigMap", path: "binaryData.key", templates: func(string) map[string]string {
			return map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gen}\nbinaryData: {key: {{ randAlphaNum 16 | b64enc | quote }}}\n"}
		}},
		{name: "container env", kind: "Deployment", path: "spec.template.spec.containers[0].env[0].value", templates: func(string) map[string]string {
			return map[string]string{"d.yaml": fmt.Sprintf(genDeployment, "env: [{name: SEED, value: {{ randAlphaNum 16 | quote }}}]")}
		}},
		{name: "container args", kind: "Deployment", path: "spec.template.spec.containers[0].args[0]", templates: func(string) map[string]string {
			return map[string]string{"d.yaml": fmt.Sprintf(genDeployment, "args: [{{ printf \"--started=%s\" (now | date \"15:04:05.000000000\") | quote }}]")}
		}},
		{name: "custom resource", kind: "Gadget", path: "spec.size", crd: true, templates: func(ns string) map[string]string {
			group := ns + ".example.com" // one CRD per test namespace
			return map[string]string{
				"crds/gadgets.yaml": helmtest.GadgetCRD(group, true),
				"g.yaml":            "apiVersion: " + group + "/v1\nkind: Gadget\nmetadata: {name: gen}\nspec: {size: {{ randInt 1 1000000000 }}}\n",
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.crd {
				c.RequireOwnCluster(t) // leaves a CRD behind
			}
			ns := c.Namespace(t)
			chart := writeChart(t, "gen", "1.0.0", tt.templates(ns))
			c.Helm(t, "install", "gen", chart, "-n", ns)
			var canaries []string
			if tt.kind == "Secret" {
				s, err := c.Clientset(t).CoreV1().Secrets(ns).Get(t.Context(), "gen", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, v := range s.Data {
					if len(v) > 5 { // not "admin", which the chart writes in plain text
						canaries = append(canaries, secretCanaries(string(v))...)
					}
				}
			}

			r := run(t, c, "gen", chart, "-n", ns, "--dry-run", "--detailed-exitcode")
			if r.Code != 0 {
				t.Errorf("re-plan of the installed chart: exit %d, want 0\n%s\n%s", r.Code, r.Stderr, r.Stdout)
			}
			if !strings.Contains(r.Stdout, "(regenerated on every render)") {
				t.Errorf("text report does not label the field:\n%s", r.Stdout)
			}
			noCanary(t, "text report", r.Stdout+r.Stderr, canaries)
			if f := run(t, c, "gen", chart, "-n", ns, "--dry-run", "--detailed-exitcode", "--fail-on-regenerated"); f.Code != 3 {
				t.Errorf("--fail-on-regenerated: exit %d, want 3\n%s\n%s", f.Code, f.Stderr, f.Stdout)
			}

			p, j := planJSON(t, c, "gen", chart, "-n", ns)
			noCanary(t, "JSON report", j.Stdout+j.Stderr, canaries)
			if p.Summary["regenerated"] != 1 || p.Summary["inPlace"]+p.Summary["rolling"]+p.Summary["destructive"]+p.Summary["create"] != 0 {
				t.Errorf("summary %v: want one update, counted as regenerated only", p.Summary)
			}
			ch := p.change(t, tt.kind, "gen")
			if ch.Action != "update" || !ch.Regenerated || ch.Destructive || ch.Fingerprint != "" || ch.Diff == "" {
				t.Errorf("want a shown, regenerated, non-destructive update, got %+v", ch)
			}
			marked := false
			for _, r := range ch.Reasons {
				marked = marked || r.Path == tt.path && r.Regenerated
			}
			if !marked {
				t.Errorf("no regenerated reason at %s: %+v", tt.path, ch.Reasons)
			}
			// A Secret value (not its annotation) is really rotated.
			rotated := strings.Contains(strings.Join(ch.Notes, "\n"), "Secret value rotated: "+tt.path)
			if want := tt.kind == "Secret" && strings.HasPrefix(tt.path, "data"); rotated != want {
				t.Errorf("rotation note %v, want %v: %q", rotated, want, ch.Notes)
			}
		})
	}
}
