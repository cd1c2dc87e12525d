package e2e

import (
	"bytes"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// ciJob runs the tool as a separate process in dir with the cluster's
// environment plus env, as one CI job would.
func ciJob(t *testing.T, c *testcluster.Cluster, tool, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(tool, args...)
	cmd.Dir = dir
	cmd.Env = append(c.Env(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("%s: %v", tool, err)
		}
		code = ee.ExitCode()
	}
	return result{Stdout: out.String(), Stderr: errOut.String(), Code: code}
}

// checkout writes the chart into a fresh working directory as ./app, as
// each job's checkout of the repository does.
func checkout(t *testing.T, templates map[string]string) string {
	t.Helper()
	src := writeChart(t, "app", "2", templates)
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "app"), os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestSavedPlanTwoJobs (issue 24) runs the two-job recipe of docs/ci.md:
// a plan job saves the plan encrypted to a recipient, the file alone goes
// to an apply job (another process, another working directory) that holds
// the identity. The file holds no Secret value in any form; show-plan prints
// the plan job's report byte for byte; a flipped byte, a truncated file or
// another identity is refused with exit 1 and nothing written; the
// untouched file applies and says who planned it.
func TestSavedPlanTwoJobs(t *testing.T) {
	c := testcluster.Get(t)
	tool := buildTool(t, c)
	ns := c.Namespace(t)
	const (
		oldPW, newPW = "two-jobs-old-canary-1", "two-jobs-new-canary-2"
		listed       = "two-jobs-list-canary"
		lastApplied  = "two-jobs-last-applied-canary"
	)
	b64 := func(v string) string { return base64.StdEncoding.EncodeToString([]byte(v)) }
	templates := func(pw string) map[string]string {
		return map[string]string{
			"creds.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\ndata:\n  pw: " + b64(pw) + "\n",
			"list.yaml": "apiVersion: v1\nkind: List\nitems:\n" +
				"- apiVersion: v1\n  kind: Secret\n  metadata: {name: listed}\n  stringData: {token: " + listed + "}\n",
			"annotated.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: annotated\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: " +
				"'{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"stringData\":{\"pw\":\"" + lastApplied + "\"}}'\ndata: {a: b}\n",
			"cm.yaml": configMap(false, "2"),
		}
	}
	c.Helm(t, "install", "app", writeChart(t, "app", "1", map[string]string{
		"creds.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: creds}\ndata:\n  pw: " + b64(oldPW) + "\n",
		"cm.yaml":    configMap(false, "1"),
	}), "-n", ns)
	key, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	other, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}

	// The plan job: its own checkout, the recipient from a secret, CI's ids.
	planDir := checkout(t, templates(newPW))
	planJob := ciJob(t, c, tool, planDir, []string{"SAFE_UPGRADE_PLAN_RECIPIENTS=" + key.Recipient().String(),
		"GITHUB_SHA=0123abc", "GITHUB_RUN_ID=4242"},
		"app", "./app", "-n", ns, "--dry-run", "-o", "markdown", "--plan-out", "plan.age")
	if planJob.Code != 0 {
		t.Fatalf("plan job: exit %d\n%s", planJob.Code, planJob.Stderr)
	}
	artifact, err := os.ReadFile(filepath.Join(planDir, "plan.age"))
	if err != nil {
		t.Fatal(err)
	}
	canaries := secretCanaries(oldPW, newPW, listed, lastApplied)
	noCanary(t, "the encrypted plan", string(artifact), canaries)
	noCanary(t, "the plan job's output", planJob.Stdout+planJob.Stderr, canaries)
	if bytes.Contains(artifact, []byte("ConfigMap")) {
		t.Fatal("the saved plan holds its manifest in clear")
	}

	// The apply job: another checkout, the plan as a file, the identity.
	applyDir := checkout(t, templates(newPW))
	put := func(t *testing.T, data []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(applyDir, "plan.age"), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	withKey := []string{"SAFE_UPGRADE_PLAN_IDENTITY=" + key.String()}
	put(t, artifact)
	show := ciJob(t, c, tool, applyDir, withKey, "show-plan", "plan.age", "-o", "markdown")
	if show.Code != 0 {
		t.Fatalf("show-plan: exit %d\n%s", show.Code, show.Stderr)
	}
	if show.Stdout != planJob.Stdout {
		t.Fatalf("show-plan differs from the plan job's report.\nplan job:\n%s\nshow-plan:\n%s", planJob.Stdout, show.Stdout)
	}
	for _, want := range []string{"commit 0123abc", "pipeline 4242", "helm-safe-upgrade/"} {
		if !strings.Contains(show.Stderr, want) {
			t.Errorf("show-plan does not say %q:\n%s", want, show.Stderr)
		}
	}

	flipped := func(i int) []byte {
		data := bytes.Clone(artifact)
		data[i] ^= 0x01
		return data
	}
	for _, tc := range []struct {
		name string
		data []byte
		env  []string
		want string
	}{
		{"a header byte flipped", flipped(40), withKey, "cannot decrypt"},
		{"a payload byte flipped", flipped(len(artifact) - 30), withKey, "edited or truncated"},
		{"the first byte flipped", flipped(0), withKey, "not an age-encrypted plan"},
		{"truncated", artifact[:len(artifact)-100], withKey, "edited or truncated"},
		{"another identity", artifact, []string{"SAFE_UPGRADE_PLAN_IDENTITY=" + other.String()}, "not encrypted to the given identity"},
		{"no identity", artifact, nil, "SAFE_UPGRADE_PLAN_IDENTITY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			put(t, tc.data)
			before := len(c.AuditEvents(t, nil))
			r := ciJob(t, c, tool, applyDir, tc.env, "app", "./app", "-n", ns, "--plan", "plan.age")
			lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
			if r.Code != 1 || len(lines) != 1 || !strings.Contains(r.Stderr, tc.want) || !strings.Contains(r.Stderr, "plan.age") {
				t.Fatalf("want exit 1 and one line naming plan.age and saying %q, got %d\n%s", tc.want, r.Code, r.Stderr)
			}
			if w := toolWrites(t, c, ns, before); len(w) > 0 {
				t.Errorf("a refused plan, yet the tool wrote: %+v", w)
			}
		})
	}

	put(t, artifact)
	apply := ciJob(t, c, tool, applyDir, withKey, "app", "./app", "-n", ns, "--plan", "plan.age")
	if apply.Code != 0 {
		t.Fatalf("apply job: exit %d\n%s", apply.Code, apply.Stderr)
	}
	for _, want := range []string{"commit 0123abc", "pipeline 4242", "Saved plan of release " + ns + "/app"} {
		if !strings.Contains(apply.Stderr+apply.Stdout, want) {
			t.Errorf("the apply job does not say %q:\n%s", want, apply.Stderr)
		}
	}
	noCanary(t, "the apply job's output", apply.Stdout+apply.Stderr, canaries)
	s, err := c.Clientset(t).CoreV1().Secrets(ns).Get(t.Context(), "creds", metav1.GetOptions{})
	if err != nil || string(s.Data["pw"]) != newPW {
		t.Fatalf("Secret/creds after the apply: %v (the new value not applied)", err)
	}
}

// TestSavedPlanInClearRefused (issue 24): a plan with no key is refused on
// write and on read unless --plan-unencrypted says so; refused, nothing is
// written to the file or the cluster.
func TestSavedPlanInClearRefused(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	c.Helm(t, "install", "app", writeChart(t, "app", "1", map[string]string{"cm.yaml": configMap(false, "1")}), "-n", ns)
	v2 := writeChart(t, "app", "2", map[string]string{"cm.yaml": configMap(false, "2")})
	path := filepath.Join(t.TempDir(), "plan.json")
	before := len(c.AuditEvents(t, nil))
	r := run(t, c, "app", v2, "-n", ns, "--dry-run", "--plan-out", path)
	if r.Code != 1 || !strings.Contains(r.Stderr, "no key to encrypt the plan to") {
		t.Fatalf("want exit 1 asking for a key, got %d\n%s", r.Code, r.Stderr)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a refused plan was written (%v)", err)
	}
	if r := run(t, c, "app", v2, "-n", ns, "--dry-run", "--plan-out", path, "--plan-unencrypted"); r.Code != 0 || !strings.Contains(r.Stderr, "WARNING: --plan-unencrypted") {
		t.Fatalf("--plan-unencrypted: want exit 0 and a warning, got %d\n%s", r.Code, r.Stderr)
	}
	r = run(t, c, "app", v2, "-n", ns, "--plan", path)
	if r.Code != 1 || !strings.Contains(r.Stderr, "not an age-encrypted plan") {
		t.Fatalf("want exit 1 refusing the plan in clear, got %d\n%s", r.Code, r.Stderr)
	}
	if w := toolWrites(t, c, ns, before); len(w) > 0 {
		t.Errorf("refused plans, yet the tool wrote: %+v", w)
	}
}
