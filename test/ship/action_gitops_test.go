package ship

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestActionGitOps: with gitops-base-ref the action checks the pull
// request's base revision out beside the head and runs the GitOps gate,
// no cluster involved: a HelmRelease of the repository's own chart whose
// claim grows is blocked (the step fails with 2, the report in the job
// summary, SARIF written); an acknowledgement committed in the head lets
// it through (3); a base revision that is not there fails the step (1).
func TestActionGitOps(t *testing.T) {
	actionDir, env := actionSetup(t, testcluster.Get(t))

	// A GitOps repository: its chart and a HelmRelease of it under gitops/.
	repo := t.TempDir()
	src := chart(t, "demo")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		copyFile(t, p, filepath.Join(repo, "gitops", "charts", "demo", rel), 0o644)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	release := filepath.Join(repo, "gitops", "shop.yaml")
	write := func(path, body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hr := `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: self, namespace: apps}
spec: {url: "https://git.example.com/repo"}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: shop, namespace: apps}
spec:
  chart: {spec: {chart: ./charts/demo, sourceRef: {kind: GitRepository, name: self}}}
  values:
    db: {storage: 1Gi}
`
	git := func(args ...string) {
		t.Helper()
		if r := (cmd{Dir: repo, Env: env}).run(t, "git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...); r.Code != 0 {
			t.Fatalf("git %s:\n%s", strings.Join(args, " "), r)
		}
	}
	write(release, hr)
	git("init", "-q")
	git("add", "-A")
	git("commit", "-qm", "base")
	write(release, strings.Replace(hr, "storage: 1Gi", "storage: 2Gi", 1))
	git("commit", "-qam", "head: the claim grows")

	sarif := filepath.Join(t.TempDir(), "plan.sarif")
	inputs := map[string]string{"gitops-base-ref": "HEAD~1", "gitops-head": filepath.Join(repo, "gitops"), "gitops-sarif": sarif}
	r := runAction(t, actionDir, env, inputs)
	if r.Code != 2 || r.Outputs["exit-code"] != "2" || !strings.Contains(r.Log, "::error title=safe-upgrade::the GitOps change blocked") {
		t.Fatalf("action: step %q exited %d (exit-code %q), want the gate blocked (2)\n%s", r.Failed, r.Code, r.Outputs["exit-code"], r.Log)
	}
	for _, want := range []string{"# HelmRelease apps/shop", "recreate-required"} {
		if !strings.Contains(r.Summary, want) {
			t.Errorf("the job summary lacks %q:\n%s", want, r.Summary)
		}
	}
	if data, err := os.ReadFile(sarif); err != nil || !strings.Contains(string(data), "recreate-required") {
		t.Errorf("gitops-sarif: %v\n%s", err, data)
	}

	write(filepath.Join(repo, "gitops", ".safe-upgrade-acks.yaml"), "- kind: StatefulSet\n  namespace: apps\n  name: shop-db\n  reason: reviewed\n")
	inputs["gitops-sarif"] = ""
	if r := runAction(t, actionDir, env, inputs); r.Code != 0 || r.Outputs["exit-code"] != "3" {
		t.Errorf("acknowledged: step %q exited %d (exit-code %q), want changes pending (3)\n%s", r.Failed, r.Code, r.Outputs["exit-code"], r.Log)
	}

	inputs["gitops-base-ref"] = "no-such-revision"
	if r := runAction(t, actionDir, env, inputs); r.Code != 1 || !strings.Contains(r.Log, "gitops-base-ref: cannot check out 'no-such-revision'") {
		t.Errorf("unknown base: step %q exited %d, want 1 naming it\n%s", r.Failed, r.Code, r.Log)
	}
}
