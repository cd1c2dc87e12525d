package e2e

import (
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// noisyTemplates render new values on every render: a generated password
// (written in data, and in stringData), a generated CA, and a timestamp
// annotation on a pod template.
var noisyTemplates = map[string]string{
	"secret.yaml": `apiVersion: v1
kind: Secret
metadata: {name: creds}
data:
  password: {{ randAlphaNum 16 | b64enc | quote }}
`,
	"token.yaml": `apiVersion: v1
kind: Secret
metadata: {name: token}
stringData:
  token: {{ randAlphaNum 16 | quote }}
`,
	"tls.yaml": `{{- $ca := genCA "noise-ca" 365 }}
apiVersion: v1
kind: Secret
metadata: {name: ca}
type: kubernetes.io/tls
data:
  tls.crt: {{ $ca.Cert | b64enc | quote }}
  tls.key: {{ $ca.Key | b64enc | quote }}
`,
	"deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {rendered-at: {{ now | quote }}}
    spec: {containers: [{name: web, image: "nginx:1.25"}]}
`,
}

// TestNoiseIsNotAChange: planning the installed chart again with the same
// values shows the regenerated fields, labelled, and --detailed-exitcode
// says nothing changes.
func TestNoiseIsNotAChange(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	chart := writeChart(t, "noisy", "1.0.0", noisyTemplates)
	c.Helm(t, "install", "noisy", chart, "-n", ns)
	for range 2 {
		if r := run(t, c, "noisy", chart, "-n", ns, "--dry-run", "--detailed-exitcode"); r.Code != 0 {
			t.Fatalf("re-plan of the same chart and values: exit %d, want 0\n%s\n%s", r.Code, r.Stderr, r.Stdout)
		}
	}
	p, _ := planJSON(t, c, "noisy", chart, "-n", ns)
	if p.Summary["regenerated"] != 4 || p.Summary["inPlace"]+p.Summary["rolling"]+p.Summary["destructive"] != 0 {
		t.Errorf("summary %v: want the 4 updates counted as regenerated only", p.Summary)
	}
	for _, want := range []struct{ kind, name, path string }{
		{"Secret", "creds", "data.password"},
		{"Secret", "token", "data.token"},
		{"Secret", "ca", "data[tls.crt]"},
		{"Deployment", "web", "spec.template.metadata.annotations[rendered-at]"},
	} {
		ch := p.change(t, want.kind, want.name)
		if ch.Action != "update" || !ch.Regenerated || ch.Destructive || ch.Fingerprint != "" || ch.Diff == "" {
			t.Errorf("%s/%s: want a shown, regenerated, non-destructive update, got %+v", want.kind, want.name, ch)
		}
		found := false
		for _, r := range ch.Reasons {
			found = found || r.Path == want.path && r.Regenerated
		}
		if !found {
			t.Errorf("%s/%s: no regenerated reason at %s: %+v", want.kind, want.name, want.path, ch.Reasons)
		}
	}
	text := run(t, c, "noisy", chart, "-n", ns, "--dry-run")
	if !strings.Contains(text.Stdout, "(regenerated on every render)") || !strings.Contains(text.Stdout, "4 regenerated") {
		t.Errorf("text report does not label the regenerated fields:\n%s", text.Stdout)
	}
	// A real change next to the noise still counts.
	changed := map[string]string{}
	for k, v := range noisyTemplates {
		changed[k] = strings.Replace(v, "nginx:1.25", "nginx:1.26", 1)
	}
	if r := run(t, c, "noisy", writeChart(t, "noisy", "1.1.0", changed), "-n", ns, "--dry-run", "--detailed-exitcode"); r.Code != 3 {
		t.Fatalf("image change with noise: exit %d, want 3\n%s", r.Code, r.Stderr)
	}
}
