package watch

import (
	"bytes"
	"testing"
	"time"
)

func TestProgress(t *testing.T) {
	first := []Line{{ID: "Deployment.apps/ns/web", Text: "in-progress: 1/3 replaced, 3/3 ready"}, {ID: "ConfigMap/ns/cfg", Text: "current"}}
	second := []Line{{ID: "Deployment.apps/ns/web", Text: "current: 3/3 replaced, ready"}, {ID: "ConfigMap/ns/cfg", Text: "current"}}
	tests := []struct {
		name string
		tty  bool
		want string
	}{
		{"plain: a line per change", false, "Deployment.apps/ns/web: in-progress: 1/3 replaced, 3/3 ready (1s)\n" +
			"ConfigMap/ns/cfg: current (1s)\n" +
			"Deployment.apps/ns/web: current: 3/3 replaced, ready (2s)\n"},
		{"terminal: redrawn in place", true, "\r\x1b[2K  Deployment.apps/ns/web: in-progress: 1/3 replaced, 3/3 ready (1s)\n" +
			"\r\x1b[2K  ConfigMap/ns/cfg: current (1s)\n" +
			"\x1b[2A\r\x1b[2K  Deployment.apps/ns/web: current: 3/3 replaced, ready (2s)\n" +
			"\r\x1b[2K  ConfigMap/ns/cfg: current (2s)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := NewProgress(&buf, tt.tty)
			p.Update(first, time.Second)
			p.Update(second, 2*time.Second)
			p.Done()
			if buf.String() != tt.want {
				t.Errorf("got %q\nwant %q", buf.String(), tt.want)
			}
		})
	}
}
