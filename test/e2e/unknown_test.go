package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestUnknownFieldsNamed (issue 26): a chart whose Deployment has misspelled
// fields (spec.replica, a container's imagePullPolic) and whose Secret has
// its payload under a misspelled strinData passes Helm 3's upgrade (the API
// server drops unknown fields with a warning), so the plan is not refused:
// exit 0, with a warning on each object naming the dropped fields and
// quoting the server; --detailed-exitcode counts it (3: what is stored is
// not the render). The Secret's value appears nowhere. Once the release
// holds the typos, the unchanged chart's re-plan (a noop: Helm sends
// nothing) still names them.
func TestUnknownFieldsNamed(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	const value = "misspelled-secret-value-7f3a"
	deployment := func(replicas, pullPolicy string) string {
		return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  ` + replicas + `: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: app, image: nginx:1.27, ` + pullPolicy + `: Always}
`
	}
	secret := func(field string) string {
		return "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\n" + field + ": {pw: " + value + "}\n"
	}
	c.Helm(t, "install", "app", writeChart(t, "app", "1.0.0", map[string]string{
		"web.yaml": deployment("replicas", "imagePullPolicy"), "creds.yaml": secret("stringData")}), "-n", ns)
	v2 := writeChart(t, "app", "2.0.0", map[string]string{
		"web.yaml": deployment("replica", "imagePullPolic"), "creds.yaml": secret("strinData")})
	webFields := []string{"spec.replica", "spec.template.spec.containers[0].imagePullPolic"}

	check := func(t *testing.T, webAction string) {
		t.Helper()
		before := auditMark(t, c)
		r := run(t, c, "app", v2, "-n", ns, "--dry-run")
		if r.Code != 0 {
			t.Errorf("--dry-run: exit %d, want 0 (Helm's upgrade goes through)\n%s", r.Code, r.Stderr)
		}
		for _, want := range []string{ns + "/web", `the API server warns: unknown field "spec.replica"`,
			`unknown field "spec.template.spec.containers[0].imagePullPolic"`, ns + "/creds", `strinData: the API server warns: unknown field "strinData"`} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("the text report lacks %q\n%s", want, r.Stdout)
			}
		}
		p, r := planJSON(t, c, "app", v2, "-n", ns, "--detailed-exitcode")
		if r.Code != 3 {
			t.Errorf("--detailed-exitcode: exit %d, want 3 (the stored objects are not the render)\n%s", r.Code, r.Stderr)
		}
		web := p.change(t, "Deployment", "web")
		if web.Action != webAction || !slices.Equal(web.Pruned, webFields) ||
			!strings.Contains(strings.Join(web.Notes, "\n"), "warning: the server drops fields the chart sets: spec.replica, spec.template.spec.containers[0].imagePullPolic: the API server warns:") {
			t.Errorf("Deployment/web: action %s pruned %v (want %s, %v), notes:\n%s", web.Action, web.Pruned, webAction, webFields, strings.Join(web.Notes, "\n"))
		}
		if creds := p.change(t, "Secret", "creds"); !slices.Equal(creds.Pruned, []string{"strinData"}) {
			t.Errorf("Secret/creds: pruned %v, want [strinData]", creds.Pruned)
		}
		for _, out := range []string{r.Stdout, r.Stderr} {
			if strings.Contains(out, value) {
				t.Errorf("the Secret's value is in the output:\n%s", out)
			}
		}
		assertOnlyDryRunWrites(t, c, ns, before)
	}
	t.Run("upgrade introduces them", func(t *testing.T) { check(t, "update") })

	// Helm 3's upgrade takes the chart (the server drops the fields); the
	// same chart planned again sends nothing, and still names them.
	c.Helm(t, "upgrade", "app", v2, "-n", ns)
	t.Run("release holds them", func(t *testing.T) { check(t, "noop") })
}
