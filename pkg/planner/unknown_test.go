package planner

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/clusterfake"
)

// TestUnknownFields (issue 26): a field of a built-in object the server does
// not know is named on the object with the server's warning, also when the
// update is a noop (Helm sends nothing: the whole object is asked about
// with a dry-run create); the server decides, and offline the decoding's
// own words are quoted, saying so. A clean object costs no request.
func TestUnknownFields(t *testing.T) {
	const typo = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: prod}
spec:
  replica: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: app, image: nginx, imagePullPolic: Always}
`
	clean := strings.NewReplacer("  replica: 3\n", "", ", imagePullPolic: Always", "").Replace(typo)
	both := []string{"spec.replica", "spec.template.spec.containers[0].imagePullPolic"}
	tests := []struct {
		name     string
		manifest string
		offline  bool
		unknown  []string // what the server warns about
		want     []string
		note     string
		creates  int32
	}{
		{name: "server warns", manifest: typo, unknown: both, want: both, creates: 1,
			note: `warning: the server drops fields the chart sets: spec.replica, spec.template.spec.containers[0].imagePullPolic: the API server warns: unknown field "spec.replica"; unknown field "spec.template.spec.containers[0].imagePullPolic"; apps/v1 Deployment has no such field`},
		{name: "a newer server knows the field", manifest: typo, unknown: both[1:], want: both[1:], creates: 1},
		{name: "offline", manifest: typo, offline: true, want: both,
			note: `unknown field "spec.replica"; unknown field "spec.template.spec.containers[0].imagePullPolic" (offline: found by decoding the render as the API server does, no server asked)`},
		{name: "clean object, no request", manifest: clean, unknown: both},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Online, the objects are the last release's (so an unchanged
			// render is a noop, as Offline gives it), and the server warns.
			cluster := Offline{Release: "app", Namespace: "prod"}.Parts()
			server := &clusterfake.Warner{Unknown: tt.unknown}
			if !tt.offline {
				cluster.Offline, cluster.DryRuns = false, server
			}
			p, err := New(cluster, "").Plan(context.Background(), Input{
				Release:          plan.Release{Name: "app", Namespace: "prod", CurrentRevision: 1},
				PreviousManifest: tt.manifest,
				NextManifest:     tt.manifest,
			})
			if err != nil {
				t.Fatal(err)
			}
			c := p.Changes[0]
			notes := strings.Join(c.Notes, "\n")
			if c.Action != plan.ActionNoop || !slices.Equal(c.Pruned, tt.want) || !strings.Contains(notes, tt.note) {
				t.Errorf("action %s, pruned %v, want noop with %v and a note with %q; notes:\n%s", c.Action, c.Pruned, tt.want, tt.note, notes)
			}
			if got := server.Creates.Load(); got != tt.creates {
				t.Errorf("%d dry-run creates, want %d", got, tt.creates)
			}
			if p.HasChanges() != (len(tt.want) > 0) {
				t.Errorf("HasChanges %v with pruned %v: --detailed-exitcode counts a dropped field", p.HasChanges(), c.Pruned)
			}
		})
	}
}
