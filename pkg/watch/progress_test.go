package watch

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/golden"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/injection"
)

func TestProgress(t *testing.T) {
	first := []Line{{ID: "Deployment.apps/ns/web", Text: "in-progress: 1/3 updated, 3/3 ready"}, {ID: "ConfigMap/ns/cfg", Text: "current"}}
	second := []Line{{ID: "Deployment.apps/ns/web", Text: "current: 3/3 updated, 3/3 ready"}, {ID: "ConfigMap/ns/cfg", Text: "current"}}
	tests := []struct {
		name string
		tty  bool
		want string
	}{
		{"plain: a line per change", false, "Deployment.apps/ns/web: in-progress: 1/3 updated, 3/3 ready (1s)\n" +
			"ConfigMap/ns/cfg: current (1s)\n" +
			"Deployment.apps/ns/web: current: 3/3 updated, 3/3 ready (2s)\n"},
		{"terminal: redrawn in place, autowrap off", true, "\x1b[?7l\r\x1b[J  Deployment.apps/ns/web: in-progress: 1/3 updated, 3/3 ready (1s)\n" +
			"  ConfigMap/ns/cfg: current (1s)\n\x1b[?7h" +
			"\x1b[?7l\r\x1b[2A\x1b[J  Deployment.apps/ns/web: current: 3/3 updated, 3/3 ready (2s)\n" +
			"  ConfigMap/ns/cfg: current (2s)\n\x1b[?7h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := NewProgress(&buf, tt.tty, nil)
			p.Update(first, time.Second)
			p.Update(second, 2*time.Second)
			p.Done()
			if buf.String() != tt.want {
				t.Errorf("got %q\nwant %q", buf.String(), tt.want)
			}
		})
	}
}

// TestProgressOffTerminal: off a terminal, the lines of a watch of
// watchScript, second by second: a line when an object's text changes
// (never for the clock alone), and every Heartbeat one naming what is
// still awaited.
func TestProgressOffTerminal(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, false, redact.NewSanitizer(redact.NewMasker()))
	for i, lines := range watchScript() {
		p.Update(lines, time.Duration(i)*time.Second+300*time.Millisecond)
	}
	p.Done()
	golden.Assert(t, "testdata/progress-off-terminal.golden", buf.Bytes())
	// At 10s and 20s, something still awaited each time.
	if beats := strings.Count(buf.String(), "still waiting for"); beats != 2 {
		t.Errorf("%d heartbeats in %d seconds, want 2, every %s", beats, len(watchScript()), Heartbeat)
	}
}

// TestProgressHostileText: what the cluster says of a failing pod (an
// image name, the kubelet's message) carrying escape sequences, a
// 20 000-byte line and a Secret value is shown masked, escaped and bounded,
// on a terminal and off it.
func TestProgressHostileText(t *testing.T) {
	const secret = "image-secret-value-3b9d"
	san := redact.NewSanitizer(redact.NewMasker())
	san.AddValue([]byte(secret))
	hostile := secret + injection.All()
	before := deployment(1, webSpec, nil)
	stuck := map[string]interface{}{"replicas": int64(1), "updatedReplicas": int64(1)}
	for _, tty := range []bool{false, true} {
		t.Run(fmt.Sprintf("terminal %v", tty), func(t *testing.T) {
			cluster := fakeCluster(before, podObj("web-old", "nginx:1.25", ""))
			w := New(cluster, &plan.Plan{Changes: []plan.Change{webChange(before, before)}})
			w.Refresh = time.Hour
			ctx := context.Background()
			if err := w.Snapshot(ctx); err != nil {
				t.Fatal(err)
			}
			pod := podObj("web-new", "registry/"+hostile+":pull-error", "ImagePullBackOff")
			statuses, _, _ := unstructured.NestedSlice(pod.Object, "status", "containerStatuses")
			_ = unstructured.SetNestedField(statuses[0].(map[string]interface{}), "Back-off pulling image "+hostile, "state", "waiting", "message")
			_ = unstructured.SetNestedSlice(pod.Object, statuses, "status", "containerStatuses")
			cluster.Put(deploymentsGVR, deployment(2, webSpec, stuck))
			cluster.Put(live.PodsGVR, pod)
			var shown strings.Builder
			// A terminal wide enough for the whole text: what is
			// checked is its escaping, not its cut.
			show := NewProgress(&shown, false, san)
			if tty {
				show = NewTerminalProgress(&shown, func() (int, int) { return 1 << 20, 0 }, san)
			}
			out, err := w.Run(ctx, time.Minute, show)
			if err != nil {
				t.Fatal(err)
			}
			if ob := out.Objects[0]; ob.State != plan.StateFailed || !strings.Contains(ob.Reason, "cannot be pulled") {
				t.Fatalf("outcome %+v, want failed on the image", ob)
			}
			got := shown.String()
			// The terminal's own redraw: autowrap off, carriage return,
			// cursor up, erase down; autowrap on at the end.
			own := regexp.MustCompile(`\x1b\[\?7l\r(?:\x1b\[\d+A)?\x1b\[J|(\n)\x1b\[\?7h`)
			if bad := injection.UnsafeLines(own.ReplaceAllString(got, "$1")); bad != "" {
				t.Errorf("progress: %s", bad)
			}
			if strings.Contains(got, secret) {
				t.Errorf("progress shows the Secret value:\n%.300q", got)
			}
			for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
				if len(line) > 2*redact.MessageLimit || !strings.Contains(line, "…[+") && strings.Contains(line, "LLLL") {
					t.Errorf("progress line of %d bytes, not cut to %d with a marker: %.200q", len(line), redact.MessageLimit, line)
				}
			}
			if !strings.Contains(got, `\x1b]52;c;`) || !strings.Contains(got, "Deployment.apps/ns/web: failed") {
				t.Errorf("progress does not show the escaped text:\n%.400q", got)
			}
		})
	}
}
