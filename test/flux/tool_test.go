package flux

import (
	"bytes"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/cli"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/proc"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// tool runs the tool in process against the cluster.
func tool(c *testcluster.Cluster, args ...string) proc.Result {
	var out, errOut bytes.Buffer
	streams := iostreams.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	code := cli.Execute("helm-safe-upgrade", append(args, "--kubeconfig", c.Kubeconfig), streams, cli.BuildInfo{Version: "flux-e2e", Commit: "test"})
	return proc.Result{Stdout: out.String(), Stderr: errOut.String(), Code: code}
}

// mustTool is tool, failing the test unless the tool exits 0.
func mustTool(t *testing.T, c *testcluster.Cluster, args ...string) proc.Result {
	t.Helper()
	r := tool(c, args...)
	if r.Code != 0 {
		t.Fatalf("helm safe-upgrade %s: %s", strings.Join(args, " "), r)
	}
	return r
}
