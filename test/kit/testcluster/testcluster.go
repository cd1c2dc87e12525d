// Package testcluster gives end-to-end tests a real control plane: etcd,
// kube-apiserver, kube-controller-manager and kube-scheduler built from the
// Go module proxy by scripts/build-controlplane.sh and started by
// scripts/kube-up.sh, with kwok playing the kubelets of fake Nodes (pods run,
// or fail by image tag: docs/development.md), plus the real helm v3 and v4
// CLIs and kubectl of the same build.
//
// A package that uses it calls Main from its TestMain; the first Get starts
// the control plane (once per test binary) and Main stops it after the tests.
// When SAFE_UPGRADE_KUBECONFIG names the kubeconfig of a cluster started by
// scripts/kube-up.sh, that cluster is used and left running. With
// SAFE_UPGRADE_USE_CLUSTER=1 (make test USE_CLUSTER=1) the current context of
// the user's KUBECONFIG is used instead and no control plane is built; only
// then is the user's kubeconfig read. Tests never skip because the control
// plane is missing: when it cannot start, Get fails the test with the reason.
// On a user's cluster, the checks that need the API server's audit log skip
// (see AuditEvents), and so do tests that need a cluster of their own
// (RequireOwnCluster).
//
//	func TestMain(m *testing.M) { testcluster.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		c := testcluster.Get(t)
//		ns := c.Namespace(t)
//		c.Helm(t, "install", "demo", chart, "-n", ns)
//	}
package testcluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ReuseEnv names the environment variable that points at the kubeconfig of a
// running cluster (from scripts/kube-up.sh) to use instead of starting one.
const ReuseEnv = "SAFE_UPGRADE_KUBECONFIG"

// UserClusterEnv set to 1 opts in to running against the current context of
// the user's own KUBECONFIG (kind, k3d, minikube, a dev cluster).
const UserClusterEnv = "SAFE_UPGRADE_USE_CLUSTER"

// Cluster is a running control plane and the client binaries built with it.
type Cluster struct {
	// Kubeconfig is the admin kubeconfig (user "admin", group system:masters).
	Kubeconfig string
	// RESTConfig is built from Kubeconfig, with client-side rate limits raised.
	RESTConfig *rest.Config
	// AuditLogPath is the API server's JSON audit log; empty for a reused
	// cluster that kube-up.sh did not start.
	AuditLogPath string
	// Helm3 and Helm4 are the paths of the helm CLIs (v3.22.0, v4.3.1).
	Helm3 string
	Helm4 string
	// Kubectl is the path of kubectl, the same version as the control plane.
	Kubectl string
	// ServerVersion is what the API server reports, e.g. v1.37.2.
	ServerVersion string
	// Root is the repository root (where go.mod is), for testdata and bin/.
	Root string
	// UserCluster is true for a cluster of the user's (UserClusterEnv): no
	// audit log, other workloads around, real nodes.
	UserCluster bool

	helmHome string
	audit    auditLog
	// private is true for a cluster of one test's own (Private).
	private bool
}

var (
	mainCalled bool
	startOnce  sync.Once
	shared     *Cluster
	startErr   error
	// anotherOnce starts the second cluster (Another).
	anotherOnce sync.Once
	another     *Cluster
	anotherErr  error
	// owned are the clusters this binary started (kube-up.sh state dir and
	// supervising process), stopped by Main; none when an existing one was
	// reused.
	owned []ownedCluster
)

// ownedCluster is a control plane this binary started.
type ownedCluster struct {
	state      string
	supervisor *exec.Cmd
}

// Main runs the tests of a package (call it from TestMain), then stops the
// control plane if a test started one, and exits with the tests' code. The
// control plane's logs are kept (and their folder printed) when tests failed.
func Main(m *testing.M) {
	mainCalled = true
	code := m.Run()
	if err := stop(code == 0); err != nil {
		fmt.Fprintf(os.Stderr, "testcluster: stopping the control plane: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// Get returns the shared control plane, starting it on first use. It fails
// the test (never skips) when the control plane cannot start.
func Get(t testing.TB) *Cluster {
	t.Helper()
	if !mainCalled {
		t.Fatal("testcluster: call testcluster.Main(m) from this package's TestMain, so the control plane is stopped after the tests")
	}
	startOnce.Do(func() { shared, startErr = start() })
	if startErr != nil {
		t.Fatalf("testcluster: the control plane is not available: %v", startErr)
	}
	return shared
}

func start() (*Cluster, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	c := &Cluster{Root: root, UserCluster: os.Getenv(UserClusterEnv) == "1"}
	// Cached binaries make this instant; a cold build takes several minutes.
	fmt.Fprintln(os.Stderr, "testcluster: building the control plane and helm if not cached (cold: several minutes)")
	build := []string{"all"}
	var env []string
	if c.UserCluster {
		// The user's cluster needs no control plane: kubectl and helm only.
		build, env = []string{"kubernetes", "helm"}, []string{"KUBE_COMPONENTS=kubectl"}
	}
	if _, err := runScript(root, env, "build-controlplane.sh", build...); err != nil {
		return nil, err
	}
	if err := c.findBinaries(); err != nil {
		return nil, err
	}

	switch kc := os.Getenv(ReuseEnv); {
	case c.UserCluster:
		if c.Kubeconfig, err = userKubeconfig(); err != nil {
			return nil, err
		}
	case kc != "":
		c.Kubeconfig = kc
	default:
		if c.Kubeconfig, err = startOwned(root, "test-", nil); err != nil {
			return nil, err
		}
	}
	if err := c.connect(); err != nil {
		return nil, err
	}
	if c.UserCluster {
		fmt.Fprintf(os.Stderr, "testcluster: using your cluster %s (%s); every namespace the tests create is deleted after them\n",
			c.RESTConfig.Host, c.ServerVersion)
	}
	return c, nil
}

// startOwned starts a control plane with kube-up.sh in a new state dir
// under the cache's run/ (named prefix...), with env added, and returns its
// kubeconfig; Main stops it.
func startOwned(root, prefix string, env []string) (string, error) {
	o, kc, err := startState(root, prefix, env)
	if o.state != "" {
		owned = append(owned, o)
	}
	return kc, err
}

// startState starts a control plane like startOwned and returns it, for
// the caller to stop.
func startState(root, prefix string, env []string) (ownedCluster, string, error) {
	runDir := filepath.Join(cacheDir(root), "run")
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return ownedCluster{}, "", err
	}
	state, err := os.MkdirTemp(runDir, prefix+filepath.Base(mustGetwd())+"-")
	if err != nil {
		return ownedCluster{}, "", err
	}
	kc, supervisor, err := kubeUp(root, state, env)
	return ownedCluster{state: state, supervisor: supervisor}, kc, err
}

// connect reads the cluster's kubeconfig, version and audit log, and makes
// its private helm homes.
func (c *Cluster) connect() error {
	var err error
	if audit := filepath.Join(filepath.Dir(c.Kubeconfig), "audit.log"); fileExists(audit) {
		c.AuditLogPath = audit
	}
	if c.RESTConfig, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig); err != nil {
		return fmt.Errorf("reading kubeconfig %s: %w", c.Kubeconfig, err)
	}
	c.RESTConfig.QPS, c.RESTConfig.Burst = 100, 200
	dc, err := discovery.NewDiscoveryClientForConfig(c.RESTConfig)
	if err != nil {
		return err
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return fmt.Errorf("asking the API server for its version: %w", err)
	}
	c.ServerVersion = v.GitVersion
	c.helmHome, err = os.MkdirTemp("", "testcluster-helm-")
	return err
}

// Another returns a second control plane, of its own: another etcd and API
// server (no controllers), started on first use (once per test binary) and
// stopped by Main, for what must not carry over from one cluster to another
// (a plan saved against one and applied to the other). It skips the test on
// the user's cluster (UserClusterEnv), where there is no second one.
func Another(t testing.TB) *Cluster {
	t.Helper()
	first := Get(t) // the binaries are built
	first.RequireOwnCluster(t)
	anotherOnce.Do(func() {
		c := &Cluster{Root: first.Root, Helm3: first.Helm3, Helm4: first.Helm4, Kubectl: first.Kubectl}
		fmt.Fprintln(os.Stderr, "testcluster: starting a second control plane")
		if c.Kubeconfig, anotherErr = startOwned(c.Root, "another-", []string{"KUBE_COMPONENTS=kube-apiserver kubectl"}); anotherErr == nil {
			anotherErr = c.connect()
		}
		another = c
	})
	if anotherErr != nil {
		t.Fatalf("testcluster: the second control plane is not available: %v", anotherErr)
	}
	return another
}

// userKubeconfig writes the current context of the user's kubeconfig
// (KUBECONFIG or ~/.kube/config, as kubectl reads it), with its credentials
// inlined, to a private file, so helm and the tool see that context only.
func userKubeconfig() (string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).RawConfig()
	if err != nil {
		return "", fmt.Errorf("%s=1: reading your kubeconfig: %w", UserClusterEnv, err)
	}
	if raw.CurrentContext == "" {
		return "", fmt.Errorf("%s=1: your kubeconfig (%s) has no current context", UserClusterEnv, strings.Join(rules.Precedence, ":"))
	}
	if err := clientcmdapi.MinifyConfig(&raw); err != nil {
		return "", fmt.Errorf("%s=1: context %s: %w", UserClusterEnv, raw.CurrentContext, err)
	}
	if err := clientcmdapi.FlattenConfig(&raw); err != nil {
		return "", fmt.Errorf("%s=1: context %s: %w", UserClusterEnv, raw.CurrentContext, err)
	}
	dir, err := os.MkdirTemp("", "testcluster-kubeconfig-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, clientcmd.WriteToFile(raw, path)
}

// RequireOwnCluster skips a test that changes cluster-wide state (nodes,
// persistent volumes, admission policies, CRDs) when it would run on the
// user's cluster.
func (c *Cluster) RequireOwnCluster(t testing.TB) {
	t.Helper()
	if c.UserCluster {
		t.Skip("changes cluster-wide state: runs on the project's own control plane only, not with " + UserClusterEnv + "=1")
	}
}

// stop stops the clusters this binary started and removes what it made;
// their state dirs (logs, audit log) are kept unless the tests passed.
func stop(passed bool) error {
	for _, c := range []*Cluster{shared, another} {
		if c != nil && c.helmHome != "" {
			os.RemoveAll(c.helmHome)
		}
	}
	if shared != nil && shared.UserCluster {
		os.RemoveAll(filepath.Dir(shared.Kubeconfig)) // the private copy of the user's context
	}
	var errs []error
	for _, o := range owned {
		errs = append(errs, o.stop(passed))
	}
	return errors.Join(errs...)
}

// stop stops one control plane this binary started.
func (o ownedCluster) stop(passed bool) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	_, err = runScript(root, nil, "kube-down.sh", o.state)
	if o.supervisor != nil {
		if err != nil { // kube-down failed: the supervisor must go anyway
			o.supervisor.Process.Kill()
		}
		o.supervisor.Wait() // reaps it; its exit status tells nothing new
	}
	if err != nil {
		return err
	}
	if passed {
		return os.RemoveAll(o.state)
	}
	fmt.Fprintf(os.Stderr, "testcluster: control-plane logs and audit log kept in %s\n", o.state)
	return nil
}

// kubeUp runs scripts/kube-up.sh --foreground as a child of this process (so
// the supervisor, and through it the components, are reaped when they exit),
// with env added, and returns the kubeconfig once the script says the
// cluster is ready, and the supervisor.
// KUBE_UP_OWNER_PID makes the supervisor stop the cluster if this binary dies
// without reaching the end of Main (panic, test timeout, kill).
func kubeUp(root, state string, env []string) (string, *exec.Cmd, error) {
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "kube-up.sh"), "--foreground", state)
	cmd.Dir = root
	cmd.Env = append(append(os.Environ(), env...), "KUBE_UP_OWNER_PID="+strconv.Itoa(os.Getpid()))
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if kc, ok := strings.CutPrefix(lines.Text(), "export KUBECONFIG="); ok {
			go io.Copy(io.Discard, stdout) // nothing more is expected; never block the script
			return kc, cmd, nil
		}
	}
	err = cmd.Wait()
	return "", nil, fmt.Errorf("scripts/kube-up.sh --foreground %s: %v\n%s", state, err, tail(stderr.String(), 60))
}

// syncBuffer is a bytes.Buffer safe for the exec package's copying goroutine
// and a reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// findBinaries asks scripts/lib.sh, the one place that knows the cache layout
// and the versions (KUBE_VERSION and friends are honoured), where they are.
func (c *Cluster) findBinaries() error {
	// On a user's cluster (KUBE_COMPONENTS=kubectl) only kubectl and helm are built.
	out, err := exec.Command("bash", "-c",
		`source "$1" && kube_bin_dir && helm_bin_dir "$HELM3_VERSION" && helm_bin_dir "$HELM4_VERSION"`,
		"lib.sh", filepath.Join(c.Root, "scripts", "lib.sh")).Output()
	if err != nil {
		return fmt.Errorf("reading the cache layout from scripts/lib.sh: %w", err)
	}
	dirs := strings.Fields(string(out))
	if len(dirs) != 3 {
		return fmt.Errorf("scripts/lib.sh printed %q, want three folders", out)
	}
	c.Kubectl = filepath.Join(dirs[0], "kubectl")
	c.Helm3 = filepath.Join(dirs[1], "helm")
	c.Helm4 = filepath.Join(dirs[2], "helm")
	for _, bin := range []string{c.Kubectl, c.Helm3, c.Helm4} {
		if !fileExists(bin) {
			return fmt.Errorf("%s is missing after scripts/build-controlplane.sh all", bin)
		}
	}
	return nil
}

// runScript runs scripts/NAME with ARGS, and env added to this process's
// environment, and returns its stdout; on failure the error carries the end
// of its stderr (kube-up.sh prints component logs there).
func runScript(root string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command("bash", append([]string{filepath.Join(root, "scripts", name)}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("scripts/%s %s: %w\n%s", name, strings.Join(args, " "), err, tail(stderr.String(), 60))
	}
	return stdout.String(), nil
}

// Clientset returns a typed client for the cluster.
func (c *Cluster) Clientset(t testing.TB) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.RESTConfig)
	if err != nil {
		t.Fatalf("testcluster: clientset: %v", err)
	}
	return cs
}

// Dynamic returns a dynamic client for the cluster.
func (c *Cluster) Dynamic(t testing.TB) dynamic.Interface {
	t.Helper()
	dc, err := dynamic.NewForConfig(c.RESTConfig)
	if err != nil {
		t.Fatalf("testcluster: dynamic client: %v", err)
	}
	return dc
}

// Env returns the environment for a helm (v3 or v4), kubectl or product
// process: this process's environment without KUBECONFIG and HELM_*, plus
// KUBECONFIG for the cluster and helm homes private to this test binary.
func (c *Cluster) Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "HELM_") {
			env = append(env, kv)
		}
	}
	return append(env,
		"KUBECONFIG="+c.Kubeconfig,
		"HELM_CACHE_HOME="+filepath.Join(c.helmHome, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(c.helmHome, "config"),
		"HELM_DATA_HOME="+filepath.Join(c.helmHome, "data"),
		// Helm 4 installs plugins under HELM_DATA_HOME but loads them from HELM_PLUGINS.
		"HELM_PLUGINS="+filepath.Join(c.helmHome, "data", "plugins"),
	)
}

// Helm runs the helm v3 CLI with Env and returns its combined output; it
// fails the test, showing that output, when helm fails.
func (c *Cluster) Helm(t testing.TB, args ...string) string {
	t.Helper()
	out, err := c.HelmErr(args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// HelmErr runs the helm v3 CLI like Helm but returns its error (an
// *exec.ExitError when helm ran and failed) with the combined output. It has
// no time limit of its own (see CommandContext): go test -timeout bounds it.
func (c *Cluster) HelmErr(args ...string) (string, error) {
	cmd := exec.Command(c.Helm3, args...)
	cmd.Env = c.Env()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// HelmV4 runs the helm v4 CLI (Helm4) with Env like Helm runs helm v3.
func (c *Cluster) HelmV4(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := CommandContext(t)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Helm4, args...)
	cmd.Env = c.Env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm4 %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if fileExists(filepath.Join(dir, "go.mod")) && fileExists(filepath.Join(dir, "scripts", "kube-up.sh")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod with scripts/kube-up.sh above the test's folder")
		}
		dir = parent
	}
}

// cacheDir mirrors CACHE_DIR in scripts/lib.sh.
func cacheDir(root string) string {
	if d := os.Getenv("SAFE_UPGRADE_CACHE"); d != "" {
		return d
	}
	return filepath.Join(root, ".cache")
}

func mustGetwd() string {
	wd, err := os.Getwd()
	if err != nil {
		return "pkg"
	}
	return wd
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
