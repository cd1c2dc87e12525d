package testcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
)

// Private returns a control plane of the test's own (etcd, kube-apiserver,
// kube-controller-manager), started now and stopped when the test ends, for
// a test that disturbs the cluster as a whole — stopping its API server
// (StopAPIServer) — which other tests, running in parallel, must not see.
// It skips on the user's cluster (UserClusterEnv).
func Private(t testing.TB) *Cluster {
	t.Helper()
	if !mainCalled {
		t.Fatal("testcluster: call testcluster.Main(m) from this package's TestMain")
	}
	if os.Getenv(UserClusterEnv) == "1" {
		t.Skip("starts a control plane of its own: runs on the project's control plane only, not with " + UserClusterEnv + "=1")
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// The binaries, as Get builds them, without starting the shared cluster.
	if _, err := runScript(root, nil, "build-controlplane.sh", "all"); err != nil {
		t.Fatalf("testcluster: building the control plane: %v", err)
	}
	c := &Cluster{Root: root, private: true}
	if err := c.findBinaries(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "testcluster: starting a control plane for %s alone\n", t.Name())
	o, kc, err := startState(c.Root, "private-", nil)
	if o.state != "" {
		t.Cleanup(func() {
			if c.helmHome != "" {
				os.RemoveAll(c.helmHome)
			}
			if err := o.stop(!t.Failed()); err != nil {
				t.Errorf("testcluster: stopping the private control plane: %v", err)
			}
		})
	}
	if err == nil {
		c.Kubeconfig = kc
		err = c.connect()
	}
	if err != nil {
		t.Fatalf("testcluster: the private control plane is not available: %v", err)
	}
	return c
}

// APIServerPID returns the process ID of the API server of a Private
// cluster, for a test that stops it (SIGSTOP: connections are still
// accepted and no request is answered, as with a hung server) from another
// process; the API server is continued (SIGCONT) when the test ends,
// whatever stopped it.
func (c *Cluster) APIServerPID(t testing.TB) int {
	t.Helper()
	if !c.private {
		t.Fatal("testcluster: only a Private cluster's API server may be stopped: other tests share this one")
	}
	data, err := inputfile.Read(filepath.Join(filepath.Dir(c.Kubeconfig), "kube-apiserver.pid"), "the API server's PID file", 64)
	if err != nil {
		t.Fatalf("testcluster: the API server's PID: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatalf("testcluster: the API server's PID file holds %q", data)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	return pid
}

// StopAPIServer stops the API server of a Private cluster (SIGSTOP) until
// ContinueAPIServer or the end of the test.
func (c *Cluster) StopAPIServer(t testing.TB) {
	t.Helper()
	if err := syscall.Kill(c.APIServerPID(t), syscall.SIGSTOP); err != nil {
		t.Fatalf("testcluster: stopping the API server: %v", err)
	}
}

// ContinueAPIServer continues the API server StopAPIServer (or the test,
// with APIServerPID) stopped.
func (c *Cluster) ContinueAPIServer(t testing.TB) {
	t.Helper()
	if err := syscall.Kill(c.APIServerPID(t), syscall.SIGCONT); err != nil {
		t.Fatalf("testcluster: continuing the API server: %v", err)
	}
}
