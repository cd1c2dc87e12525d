package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/toolbuild"
)

// klogLine matches a line klog writes (E1201 12:00:00.000000 ...).
var klogLine = regexp.MustCompile(`(?m)^[IWEF]\d{4} \d\d:\d\d:\d\d`)

// timedRun is one run of the tool's binary and how long it took.
type timedRun struct {
	result
	took time.Duration
}

// runBounded runs the tool's binary bin with args against c and returns
// when it exits. A run still going bound after it started fails the test:
// the API server is continued then, so that the run can end and show what
// it was doing.
func runBounded(t *testing.T, c *testcluster.Cluster, bin string, bound time.Duration, started func(), args ...string) timedRun {
	t.Helper()
	cmd := exec.Command(bin, append(args, "--kubeconfig", c.Kubeconfig)...)
	cmd.Env = c.Env()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if started != nil {
		started()
		start = time.Now() // the bound runs from what started did
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(bound):
		c.ContinueAPIServer(t)
		err = <-done
		t.Errorf("%s: still running %s after the API server stopped answering (want an end within %s)", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), bound)
	}
	r := timedRun{result: result{Stdout: out.String(), Stderr: errOut.String()}, took: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.Code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return r
}

// buildTool builds cmd/helm-safe-upgrade into a folder of the test's.
func buildTool(t *testing.T, c *testcluster.Cluster) string {
	t.Helper()
	bin, err := toolbuild.Build(c.Root, t.TempDir(), "e2e", "test")
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestTimeoutHungAPIServer (issue 25): an API server that stops answering
// (SIGSTOP: connections are accepted, nothing is answered) ends a plan at
// its --timeout, and an apply after its recreate's delete too; each says so
// in one line on stderr (no klog lines), exits 1, and the deleted
// StatefulSet comes back once the server answers again. The cluster is the
// test's own: a stopped API server would fail every test sharing it.
func TestTimeoutHungAPIServer(t *testing.T) {
	c := testcluster.Private(t)
	bin := buildTool(t, c)
	const timeout = 5 * time.Second
	// A margin of its own for each: the binary's start and its connection
	// to the cluster on a loaded machine.
	bound := 3 * timeout

	t.Run("plan", func(t *testing.T) {
		ns := c.Namespace(t)
		chart := writeChart(t, "hung", "1.0.0", map[string]string{"cm.yaml": configMap(false, "a")})
		c.Helm(t, "install", "hung", chart, "-n", ns)
		// The post-renderer stops the API server while the tool renders:
		// after it connected and started its reads, before the planner's.
		stop := filepath.Join(t.TempDir(), "stop.sh")
		script := fmt.Sprintf("#!/bin/sh\nkill -STOP %d\nexec cat\n", c.APIServerPID(t))
		if err := os.WriteFile(stop, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		r := runBounded(t, c, bin, bound, nil, "hung", writeChart(t, "hung", "1.1.0", map[string]string{"cm.yaml": configMap(false, "b")}),
			"-n", ns, "--dry-run", "--timeout", timeout.String(), "--post-renderer", stop)
		c.ContinueAPIServer(t)
		checkTimedOut(t, r, "did not answer within --timeout "+timeout.String())
	})

	t.Run("apply after the recreate's delete", func(t *testing.T) {
		ns, _ := stsRelease(t, c)
		// A pre-upgrade hook runs after the delete; its Job never completes
		// (no kubelet), so the apply is still waiting when the server stops.
		bigger := baseSTS
		bigger.size = "2Gi"
		v2 := writeChart(t, "app", "2.0.0", map[string]string{"sts.yaml": bigger.yaml(), "hook.yaml": migrateHook("migrate:1")})
		jobs := c.Clientset(t).BatchV1().Jobs(ns)
		stopAtHook := func() {
			waitFor(t, "the pre-upgrade hook's Job (created after the recreate's delete)", func() bool {
				_, err := jobs.Get(t.Context(), "migrate", metav1.GetOptions{})
				return err == nil
			})
			c.StopAPIServer(t)
		}
		r := runBounded(t, c, bin, bound+timeout, stopAtHook, "app", v2, "-n", ns, "--ack", "StatefulSet/db", "--timeout", timeout.String())
		c.ContinueAPIServer(t)
		checkTimedOut(t, r, "")
		if !strings.Contains(r.Stderr, "StatefulSet.apps/"+ns+"/db") {
			t.Errorf("the error does not name the StatefulSet it deleted:\n%s", r.Stderr)
		}
		sts := c.Clientset(t).AppsV1().StatefulSets(ns)
		if _, err := sts.Get(t.Context(), "db", metav1.GetOptions{}); apierrors.IsNotFound(err) {
			// The restore could not reach the stopped server: the journal
			// is kept and --recover restores, once the lease the run could
			// not release is stale (LeaseDuration after its last renewal).
			testcluster.Eventually(t, "--recover restores", func() (bool, string) {
				rec := run(t, c, "app", "--recover", "--yes", "-n", ns)
				// The timed-out run has ended: its Lease names a holder
				// that no longer runs until it is stale.
				if rec.Code != 0 && !strings.Contains(rec.Stderr, "is being applied by") && !strings.Contains(rec.Stderr, "no longer runs") {
					t.Fatalf("--recover: exit %d\n%s", rec.Code, rec.Stderr)
				}
				return rec.Code == 0, rec.Stderr
			})
		}
		waitFor(t, "StatefulSet db restored", func() bool {
			ctx, cancel := context.WithTimeout(t.Context(), timeout)
			defer cancel()
			_, err := sts.Get(ctx, "db", metav1.GetOptions{})
			return err == nil
		})
		if got := templateStorage(t, c, ns); got != "1Gi" {
			t.Errorf("restored StatefulSet's claim template: %s, want the 1Gi it had", got)
		}
	})
}

// checkTimedOut checks a run that the API server stopped answering: exit
// 1, with one error line on stderr (holding say), and no klog lines.
func checkTimedOut(t *testing.T, r timedRun, say string) {
	t.Helper()
	t.Logf("ended after %s, exit %d; stderr:\n%s", r.took.Round(time.Millisecond), r.Code, r.Stderr)
	if r.Code != 1 {
		t.Errorf("exit %d, want 1\n%s", r.Code, r.Stderr)
	}
	if klogLine.MatchString(r.Stderr) {
		t.Errorf("klog lines on stderr without --debug:\n%s", r.Stderr)
	}
	errLines := 0
	for _, line := range strings.Split(r.Stderr, "\n") {
		if strings.HasPrefix(line, "Error: ") {
			errLines++
		}
	}
	if errLines != 1 || !strings.Contains(r.Stderr, say) {
		t.Errorf("want one error line saying %q:\n%s", say, r.Stderr)
	}
}

// TestWatchHungAPIServer (issue 39): an API server that stops answering
// just after Helm recorded the revision, while the rollout watch runs, ends
// the run at the watch's deadline plus one request's (--timeout), and the
// error says that the server stopped answering, not that the pods were
// "not observed". The bound runBounded holds the run to is that sum with
// one more --timeout as margin for a loaded machine: a run that waited for
// the server once more (Helm's record of a failed rollout, the events, the
// lease) would need two more.
func TestWatchHungAPIServer(t *testing.T) {
	c := testcluster.Private(t)
	bin := buildTool(t, c)
	const watchTimeout, timeout = 10 * time.Second, 15 * time.Second
	ns := c.Namespace(t)
	c.Helm(t, "install", "app", writeChart(t, "app", "1.0.0", map[string]string{"d.yaml": deployment("web", "nginx:1.25", "RollingUpdate", 1)}), "-n", ns)
	secrets := c.Clientset(t).CoreV1().Secrets(ns)
	stopAfterHelm := func() {
		waitFor(t, "revision 2 recorded deployed", func() bool {
			s, err := secrets.Get(t.Context(), "sh.helm.release.v1.app.v2", metav1.GetOptions{})
			return err == nil && s.Labels["status"] == "deployed"
		})
		c.StopAPIServer(t)
	}
	// Never ready: the watch is still following it when the server stops.
	v2 := writeChart(t, "app", "1.1.0", map[string]string{"d.yaml": deployment("web", "nginx:unready", "RollingUpdate", 1)})
	r := runBounded(t, c, bin, watchTimeout+2*timeout, stopAfterHelm, "app", v2, "-n", ns,
		"--watch-timeout", watchTimeout.String(), "--timeout", timeout.String())
	c.ContinueAPIServer(t)
	checkTimedOut(t, r, `release "app" revision 2 was applied, but the API server stopped answering during the rollout watch`)
	for _, blame := range []string{"not observed", "Rollout:", "rollout failed"} {
		if strings.Contains(r.Stderr, blame) {
			t.Errorf("stderr says %q, blaming the rollout for the server's silence:\n%s", blame, r.Stderr)
		}
	}
}
