package flux

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// The folders scripts/build-flux.sh prints: each holds the controller's
// binary, named like the folder's prefix, and its CRDs under crd/.
const (
	HelmControllerEnv   = "SAFE_UPGRADE_HELM_CONTROLLER"
	SourceControllerEnv = "SAFE_UPGRADE_SOURCE_CONTROLLER"
)

// crds applies the controllers' CRDs once per test binary.
var crds struct {
	once sync.Once
	err  error
}

// controller is one controller's folder from its environment variable, or
// skips the test: the controllers are built from sources the user gives
// (FLUX_SRC), so only make test-flux asks for them.
func controller(t *testing.T, env, name string) (bin, crdDir string) {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		t.Skip("Flux's controllers not given: run make test-flux FLUX_SRC=DIR, which builds them (scripts/build-flux.sh) and sets " + env)
	}
	bin, crdDir = filepath.Join(dir, name), filepath.Join(dir, "crd")
	for _, p := range []string{bin, crdDir} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s=%s: %v", env, dir, err)
		}
	}
	return bin, crdDir
}

// Flux is a source-controller and a helm-controller watching one namespace
// of their own, stopped when the test ends.
type Flux struct {
	c  *testcluster.Cluster
	NS string
	// procs are the controllers running.
	procs []*process
}

// process is a controller started by run: its output file, and done,
// closed once it exited.
type process struct {
	log  string
	done chan struct{}
}

// checkRunning fails the test when a controller exited before the test
// ended (a flag it does not know, a crash), with its last lines.
func (f *Flux) checkRunning(t *testing.T) {
	t.Helper()
	for _, p := range f.procs {
		select {
		case <-p.done:
			t.Fatalf("%s exited:\n%s", p.log, tailFile(p.log, 30))
		default:
		}
	}
}

// Start starts both controllers for a new namespace of the test (their
// RUNTIME_NAMESPACE; they watch nothing else), after applying their CRDs.
func Start(t *testing.T, c *testcluster.Cluster) *Flux {
	t.Helper()
	hc, hcCRD := controller(t, HelmControllerEnv, "helm-controller")
	sc, scCRD := controller(t, SourceControllerEnv, "source-controller")
	crds.once.Do(func() {
		for _, d := range []string{scCRD, hcCRD} {
			if out, err := kubectl(c, "apply", "--server-side", "-f", d); err != nil {
				crds.err = fmt.Errorf("applying the CRDs of %s: %v\n%s", d, err, out)
				return
			}
		}
		out, err := kubectl(c, "wait", "--for=condition=Established", "crd", "--all")
		if err != nil {
			crds.err = fmt.Errorf("waiting for the CRDs: %v\n%s", err, out)
		}
	})
	if crds.err != nil {
		t.Fatal(crds.err)
	}
	f := &Flux{c: c, NS: c.Namespace(t)}
	// The artifact server is the one port picked: a port picked free and
	// closed can be picked again before its controller binds it (helm-
	// controller's health probe once took source-controller's artifact
	// port), so nothing else is given one.
	artifacts := freePort(t)
	f.run(t, sc,
		"--watch-all-namespaces=false", "--enable-leader-election=false",
		"--storage-path="+t.TempDir(),
		"--storage-addr=127.0.0.1:"+artifacts, "--storage-adv-addr=127.0.0.1:"+artifacts,
		noMetrics, noHealth)
	f.run(t, hc,
		"--watch-all-namespaces=false", "--enable-leader-election=false",
		noMetrics, noHealth,
		"--graceful-shutdown-timeout=10s")
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range f.procs {
				t.Logf("%s (last lines):\n%s", p.log, tailFile(p.log, 60))
			}
		}
	})
	return f
}

// run starts a controller, with its output in a file of the test, and stops
// it when the test ends (SIGTERM, then SIGKILL once the controller-runtime
// manager has had its time); it dies with the test binary.
func (f *Flux) run(t *testing.T, bin string, args ...string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), filepath.Base(bin)+".log")
	out, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	x := exec.Command(bin, args...)
	x.Env = append(f.c.Env(), "RUNTIME_NAMESPACE="+f.NS)
	x.Stdout, x.Stderr = out, out
	x.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := x.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	done := make(chan struct{})
	f.procs = append(f.procs, &process{log: log, done: done})
	go func() { _ = x.Wait(); out.Close(); close(done) }()
	t.Cleanup(func() {
		_ = x.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = x.Process.Kill()
			<-done
		}
	})
}

// Apply applies YAML documents with kubectl (client-side, as a user's
// kubectl apply), in the Flux namespace unless they name another.
func (f *Flux) Apply(t *testing.T, docs string) {
	t.Helper()
	applyIn(t, f.c, f.NS, docs)
}

// applyIn applies YAML documents with kubectl in namespace ns.
func applyIn(t *testing.T, c *testcluster.Cluster, ns, docs string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "apply.yaml")
	if err := os.WriteFile(file, []byte(docs), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := kubectl(c, "apply", "-n", ns, "-f", file); err != nil {
		t.Fatalf("kubectl apply:\n%s\n%v\n%s", docs, err, out)
	}
}

// Kubectl runs kubectl and fails the test when it fails.
func (f *Flux) Kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := kubectl(f.c, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func kubectl(c *testcluster.Cluster, args ...string) (string, error) {
	x := exec.Command(c.Kubectl, args...)
	x.Env = c.Env()
	out, err := x.CombinedOutput()
	return string(out), err
}

// Condition is a status condition of a Flux object.
type Condition struct {
	Type, Status, Reason, Message string
}

// HelmRelease is what the tests read of a HelmRelease's status.
type HelmRelease struct {
	Generation int64 `json:"-"`
	Status     struct {
		ObservedGeneration    int64       `json:"observedGeneration"`
		Conditions            []Condition `json:"conditions"`
		LastAttemptedRevision string      `json:"lastAttemptedRevision"`
		LastHandledForceAt    string      `json:"lastHandledForceAt"`
		StorageNamespace      string      `json:"storageNamespace"`
		History               []struct {
			Name         string `json:"name"`
			Namespace    string `json:"namespace"`
			Version      int    `json:"version"`
			Status       string `json:"status"`
			ChartVersion string `json:"chartVersion"`
		} `json:"history"`
	} `json:"status"`
}

// Condition returns the condition of type typ, or a zero one.
func (h HelmRelease) Condition(typ string) Condition {
	for _, c := range h.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return Condition{}
}

func (h HelmRelease) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "generation %d observed %d, attempted %s;", h.Generation, h.Status.ObservedGeneration, h.Status.LastAttemptedRevision)
	for _, c := range h.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s (%s: %s);", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// Release reads the HelmRelease name.
func (f *Flux) Release(t *testing.T, name string) HelmRelease {
	t.Helper()
	raw := f.Kubectl(t, "get", "-n", f.NS, "helmrelease", name, "-o", "json")
	var obj struct {
		Metadata struct {
			Generation int64 `json:"generation"`
		} `json:"metadata"`
		HelmRelease
	}
	if err := json.Unmarshal([]byte(raw), &obj); err != nil {
		t.Fatalf("HelmRelease %s/%s: %v", f.NS, name, err)
	}
	obj.HelmRelease.Generation = obj.Metadata.Generation
	return obj.HelmRelease
}

// WaitRelease waits until helm-controller has handled the HelmRelease's
// current generation and cond holds of it. helm-controller waits for the
// release's objects (kstatus) and a loaded 2-core machine is slow, so the
// bound is the test binary's deadline (go test -timeout), as for every
// command the tests run, not a fixed time.
func (f *Flux) WaitRelease(t *testing.T, name, what string, cond func(HelmRelease) bool) HelmRelease {
	t.Helper()
	return f.WaitStatus(t, name, what, func(h HelmRelease) bool {
		return h.Status.ObservedGeneration == h.Generation && cond(h)
	})
}

// WaitStatus is WaitRelease for a status helm-controller writes before it
// has handled the generation (one it stops at, stalled).
func (f *Flux) WaitStatus(t *testing.T, name, what string, cond func(HelmRelease) bool) HelmRelease {
	t.Helper()
	ctx, cancel := testcluster.CommandContext(t)
	defer cancel()
	var last HelmRelease
	for {
		f.checkRunning(t)
		last = f.Release(t, name)
		if cond(last) {
			return last
		}
		select {
		case <-ctx.Done():
			t.Fatalf("HelmRelease %s/%s: still not %s: %s", f.NS, name, what, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Ready is a HelmRelease whose release is in sync: Ready=True.
func Ready(h HelmRelease) bool { return h.Condition("Ready").Status == "True" }

// Reconcile asks helm-controller to run the HelmRelease's release again,
// as `flux reconcile helmrelease NAME --force` does: the same value in the
// requestedAt and forceAt annotations.
func (f *Flux) Reconcile(t *testing.T, name string) string {
	t.Helper()
	now := time.Now().Format(time.RFC3339Nano)
	f.Kubectl(t, "annotate", "-n", f.NS, "--overwrite", "helmrelease", name,
		"reconcile.fluxcd.io/requestedAt="+now, "reconcile.fluxcd.io/forceAt="+now)
	return now
}

// noServers turns off the controllers' metrics and health-probe servers
// (controller-runtime serves none on "0"): the tests read neither.
const noMetrics, noHealth = "--metrics-addr=0", "--health-addr=0"

// freePort returns a loopback port free at the time of the call.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
