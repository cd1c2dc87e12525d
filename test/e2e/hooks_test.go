package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

func migrateHook(image string) string {
	return `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations: {helm.sh/hook: pre-upgrade, helm.sh/hook-delete-policy: hook-succeeded}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: "` + image + `"}]
`
}

// TestHookJobImageChange: a pre-upgrade Job whose image changes is shown
// with its diff and runs at apply; with --no-hooks it does not run.
func TestHookJobImageChange(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	cm := map[string]string{"cm.yaml": configMap(false, "a")}
	with := func(image string) map[string]string {
		return map[string]string{"cm.yaml": cm["cm.yaml"], "hook.yaml": migrateHook(image)}
	}
	// The install's hooks are not what this test is about: helm installs
	// without them.
	c.Helm(t, "install", "hooked", writeChart(t, "hooked", "1.0.0", with("migrate:1.0")), "-n", ns, "--no-hooks")
	next := writeChart(t, "hooked", "1.1.0", with("migrate:1.1"))

	type hook struct {
		Kind, Name, Action, Diff string
		Events, DeletePolicies   []string
		RunsAtApply              bool
	}
	plan := func(args ...string) hook {
		r := run(t, c, append([]string{"hooked", next, "-n", ns, "--dry-run", "-o", "json"}, args...)...)
		var doc struct{ Hooks []hook }
		if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || len(doc.Hooks) != 1 {
			t.Fatalf("exit %d, hooks %+v (%v)\n%s", r.Code, doc.Hooks, err, r.Stderr)
		}
		return doc.Hooks[0]
	}
	h := plan()
	if h.Kind != "Job" || h.Action != "update" || !h.RunsAtApply || strings.Join(h.Events, ",") != "pre-upgrade" ||
		strings.Join(h.DeletePolicies, ",") != "hook-succeeded" {
		t.Errorf("hook %+v: want a changed pre-upgrade Job that runs at apply", h)
	}
	if !strings.Contains(h.Diff, "-      - image: migrate:1.0") || !strings.Contains(h.Diff, "+      - image: migrate:1.1") {
		t.Errorf("hook diff does not show the image change:\n%s", h.Diff)
	}
	if h := plan("--no-hooks"); h.RunsAtApply {
		t.Errorf("--no-hooks: hook %+v still runs at apply", h)
	}
	text := run(t, c, "hooked", next, "-n", ns, "--dry-run")
	if !strings.Contains(text.Stdout, "Job/migrate (pre-upgrade; delete policy hook-succeeded): changed since the last release, runs at apply") ||
		!strings.Contains(text.Stdout, "+++ new/Job/"+ns+"/migrate") {
		t.Errorf("text report:\n%s", text.Stdout)
	}
}
