// Package e2e runs the tool against a real kube-apiserver, etcd and
// kube-controller-manager (test/kit/testcluster) with charts installed by the
// real helm CLI.
package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/helmsdk"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/cli"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

func TestMain(m *testing.M) {
	helmsdk.InitProcess() // as main does: the tool runs in-process here
	testcluster.Main(m)
}

// writeChart writes a chart named name at version with the given templates
// (file name → content) and returns its directory.
func writeChart(t *testing.T, name, version string, templates map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name+"-"+version)
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	chartYAML := "apiVersion: v2\nname: " + name + "\nversion: " + version + "\n"
	if err := os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte(chartYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	for file, content := range templates {
		path := filepath.Join(dir, file)
		if !strings.Contains(file, "/") {
			path = filepath.Join(dir, "templates", file)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// result is one in-process run of the tool.
type result struct {
	Stdout, Stderr string
	Code           int
}

// run executes the tool in-process against the test cluster. Each run masks
// Secret values with a key of its own, as a separate process would.
func run(t *testing.T, c *testcluster.Cluster, args ...string) result {
	t.Helper()
	return runMasked(t, c, redact.NewMasker(), args...)
}

// runMasked is run masking with m, so that the test can tell which value a
// marker in the report stands for.
func runMasked(t *testing.T, c *testcluster.Cluster, m *redact.Masker, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runToMasked(c, m, &out, &errOut, args...)
	return result{Stdout: out.String(), Stderr: errOut.String(), Code: code}
}

// runTo executes the tool in-process with the given output streams.
func runTo(c *testcluster.Cluster, out, errOut io.Writer, args ...string) int {
	return runToMasked(c, redact.NewMasker(), out, errOut, args...)
}

func runToMasked(c *testcluster.Cluster, m *redact.Masker, out, errOut io.Writer, args ...string) int {
	streams := iostreams.Streams{In: strings.NewReader(""), Out: out, ErrOut: errOut}
	args = append(args, "--kubeconfig", c.Kubeconfig)
	return cli.ExecuteWithMasker("helm-safe-upgrade", args, streams, cli.BuildInfo{Version: "e2e", Commit: "test"}, m)
}

// jsonPlan mirrors the documented JSON contract (README, GUIDE §3).
type jsonPlan struct {
	APIVersion string `json:"apiVersion"`
	Release    struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		// Operation is install or upgrade.
		Operation string `json:"operation"`
		Revision  int    `json:"revision"`
		Chart     string `json:"chart"`
		// ApplyMethod is csa or ssa (Helm 4's server-side apply).
		ApplyMethod string `json:"applyMethod"`
		// SyncedBy names the GitOps controller that applies instead of Helm.
		SyncedBy string `json:"syncedBy"`
	} `json:"release"`
	Summary map[string]int `json:"summary"`
	Changes []jsonChange   `json:"changes"`
}

type jsonChange struct {
	APIVersion   string `json:"apiVersion"`
	Kind         string `json:"kind"`
	Namespace    string `json:"namespace"`
	Name         string `json:"name"`
	Action       string `json:"action"`
	Class        string `json:"class"`
	Destructive  bool   `json:"destructive"`
	Acknowledged bool   `json:"acknowledged"`
	Fingerprint  string `json:"fingerprint"`
	// Prediction: server (a dry-run answered) or derived.
	Prediction  string `json:"prediction"`
	Regenerated bool   `json:"regenerated"`
	Blocking    bool   `json:"blocking"`
	Reasons     []struct {
		Path, Message, Source string
		Regenerated           bool
		// Manager owns Path, on a server-side apply conflict.
		Manager string
	} `json:"reasons"`
	Diff    string `json:"diff"`
	Rollout *struct {
		Replicas int64  `json:"replicas"`
		Strategy string `json:"strategy"`
		Impact   string `json:"impact"`
	} `json:"rollout"`
	Drift []struct {
		Path     string `json:"path"`
		Reverted bool   `json:"reverted"`
		Manager  string `json:"manager"`
	} `json:"drift"`
	Notes []string `json:"notes"`
	// Pruned: fields the server drops (a CRD's pruning, unknown fields).
	Pruned []string `json:"pruned"`
	// RestartedFor: what --restart-stale restarts the workload for.
	RestartedFor []string `json:"restartedFor"`
}

// planJSON runs the tool with --dry-run -o json and decodes the plan.
func planJSON(t *testing.T, c *testcluster.Cluster, args ...string) (*jsonPlan, result) {
	t.Helper()
	r := run(t, c, append(args, "--dry-run", "-o", "json")...)
	if r.Code == 1 {
		t.Fatalf("tool failed (exit 1):\n%s\n%s", r.Stderr, r.Stdout)
	}
	var p jsonPlan
	if err := json.Unmarshal([]byte(r.Stdout), &p); err != nil {
		t.Fatalf("decoding the JSON plan: %v\nstdout:\n%s\nstderr:\n%s", err, r.Stdout, r.Stderr)
	}
	return &p, r
}

// change returns the change for kind/name, failing the test if absent.
func (p *jsonPlan) change(t *testing.T, kind, name string) jsonChange {
	t.Helper()
	for _, c := range p.Changes {
		if c.Kind == kind && c.Name == name {
			return c
		}
	}
	t.Fatalf("no change for %s/%s in plan: %+v", kind, name, p.Changes)
	return jsonChange{}
}

func (c jsonChange) paths() []string {
	var out []string
	for _, r := range c.Reasons {
		out = append(out, r.Path)
	}
	return out
}

// ackFlags are the --ack flags, bound to their fingerprints, of the plan's
// destructive changes.
func (p *jsonPlan) ackFlags() []string {
	var acks []string
	for _, ch := range p.Changes {
		if ch.Destructive {
			id := ch.Kind + "/" + ch.Name
			if ch.Namespace != "" {
				id = ch.Kind + "/" + ch.Namespace + "/" + ch.Name
			}
			acks = append(acks, "--ack", id+"@"+ch.Fingerprint)
		}
	}
	return acks
}

// sentenceParts splits a line into what it says, one part per clause.
var sentenceParts = regexp.MustCompile(`; |: |\. | — `)

// saysOnce fails the test for each line of text that says a thing twice:
// a clause of 20 characters or more it holds more than once (issue 54:
// a pod's condition, its event and "not ready before the upgrade either"
// quoting the same scheduler message).
func saysOnce(t *testing.T, what, text string) {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		for _, part := range sentenceParts.Split(line, -1) {
			if part = strings.TrimSpace(part); len(part) >= 20 && strings.Count(line, part) > 1 {
				t.Errorf("%s says %q more than once in one line:\n%s", what, part, line)
				break
			}
		}
	}
}
