package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/cli"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/termtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// slowDeployment is a Deployment whose rollout takes seconds per pod
// (minReadySeconds, one pod at a time): a watch long enough to redraw
// many times, and to resize the terminal during it.
func slowDeployment(name, image string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %s}
spec:
  replicas: %d
  minReadySeconds: 3
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec: {containers: [{name: web, image: "%s"}]}
`, name, replicas, name, name, image)
}

// TestRolloutOnTerminal (issue 42): the rollout watch as a person sees it
// in a terminal of 80 columns, and of 200 narrowed to 80 while it runs:
// at the end, one line per object watched, in its last state, and no copy
// of an earlier redraw on the screen or in the scrollback; the summary
// after it says each object once, whole.
func TestRolloutOnTerminal(t *testing.T) {
	c := testcluster.Get(t)
	c.RequireOwnCluster(t) // pods become ready only under kwok's stages
	for _, tt := range []struct {
		name         string
		cols, resize int
	}{
		// Short names: the namespace, named after the test, and the
		// object's name stay within 80 columns, the rest of each line not.
		{"80", 80, 0},
		{"200to80", 200, 80},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := c.Namespace(t)
			names := []string{"web", "api"}
			chart := func(version, image string) string {
				return writeChart(t, "app", version, map[string]string{
					"web.yaml": slowDeployment(names[0], image, 3), "api.yaml": slowDeployment(names[1], image, 2)})
			}
			c.Helm(t, "install", "app", chart("1.0.0", "nginx:1.25"), "-n", ns, "--wait", "--timeout", "5m")
			const rows = 30
			tm := termtest.Open(t, tt.cols, rows)
			streams := iostreams.Streams{In: strings.NewReader(""), Out: tm.TTY, ErrOut: tm.TTY, OutTTY: true, ErrTTY: true, ErrSize: tm.Size}
			done := make(chan int, 1)
			go func() {
				done <- cli.Execute("helm-safe-upgrade", []string{"app", chart("1.1.0", "nginx:1.26"), "-n", ns, "--kubeconfig", c.Kubeconfig},
					streams, cli.BuildInfo{Version: "e2e"})
			}()
			if tt.resize != 0 {
				testcluster.Eventually(t, "watching the rollout", func() (bool, string) {
					screen, _ := tm.Lines()
					return strings.Contains(strings.Join(screen, "\n"), "Watching the rollout"), strings.Join(screen, "\n")
				})
				tm.Resize(t, tt.resize, rows)
			}
			ctx, cancel := testcluster.CommandContext(t)
			defer cancel()
			select {
			case code := <-done:
				if code != 0 {
					t.Fatalf("exit %d, want 0", code)
				}
			case <-ctx.Done():
				t.Fatal("the tool did not finish")
			}
			tm.End(t)
			screen, scrollback := tm.Lines()
			all := append(scrollback, screen...)
			shown := strings.Join(all, "\n")
			live := regexp.MustCompile(`\(\d+(m\d+)?s\)$|…$`)
			for _, name := range names {
				prefix := "  Deployment.apps/" + ns + "/" + name + ": "
				var current, stale []string
				for _, l := range all {
					switch {
					case strings.HasPrefix(l, prefix+"current"):
						current = append(current, l)
					case strings.HasPrefix(l, prefix+"in-progress"), strings.HasPrefix(l, prefix+"failed"), strings.HasPrefix(l, prefix+"unknown"):
						stale = append(stale, l)
					}
				}
				if len(stale) > 0 {
					t.Errorf("%s: copies of earlier redraws left behind:\n%s\n\nthe terminal:\n%s", name, strings.Join(stale, "\n"), shown)
				}
				// The live line (its clock, or cut) and the summary's.
				if len(current) != 2 || !live.MatchString(current[0]) || live.MatchString(current[1]) {
					t.Errorf("%s: lines %q, want one live line then the summary's\n\nthe terminal:\n%s", name, current, shown)
				}
			}
		})
	}
}
