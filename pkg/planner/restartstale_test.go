package planner

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// TestRestartStale: --restart-stale turns the release's stale readers
// that a new template restarts into rolling changes of the restartedAt
// annotation, and nothing else: not a reader that rolls anyway, reads the
// file, is outside the release, or whose pods no template change replaces
// (a ReplicaSet).
func TestRestartStale(t *testing.T) {
	cfg := func(b string) string { return strings.Replace(configMapDoc, "%s", "a: '1', b: '"+b+"'", 1) }
	replicaSet := strings.Replace(deployment("rs", "", `        envFrom: [{configMapRef: {name: cfg}}]`), "kind: Deployment", "kind: ReplicaSet", 1)
	outside := deployment("outside", "", `        envFrom: [{configMapRef: {name: cfg}}]`)
	tests := []struct {
		name       string
		base, head string
		off        bool
		workloads  WorkloadLister
		restarted  []string              // workloads restarted, in plan order
		sees       map[string]plan.Sight // workload name and via → sight
		why        map[string]string     // workload name → why a stale one is not restarted
		stale      [2]int
	}{
		{name: "envFrom and subPath readers restarted; the file reader and the checksum roll left as they are",
			base: cfg("1") + readers("one"), head: cfg("2") + readers("two"),
			restarted: []string{"a", "b"},
			sees:      map[string]plan.Sight{"a envFrom": plan.SightRestarted, "b subPath": plan.SightRestarted, "c volume": plan.SightFile, "d envFrom": plan.SightRolls}},
		{name: "without --restart-stale nothing is restarted",
			base: cfg("1") + readers("one"), head: cfg("2") + readers("two"), off: true,
			sees: map[string]plan.Sight{"a envFrom": plan.SightStale, "b subPath": plan.SightStale}, stale: [2]int{1, 2}},
		{name: "a reader whose template changes in the same plan rolls: not restarted",
			base: cfg("1") + readers("one"), head: cfg("2") + strings.ReplaceAll(readers("two"), "image: busybox", "image: busybox:2"),
			sees: map[string]plan.Sight{"a envFrom": plan.SightRolls, "b subPath": plan.SightRolls, "c volume": plan.SightRolls}},
		{name: "a ReplicaSet keeps its pods whatever its template, a reader outside the release is not the release's: both stay stale",
			base: cfg("1") + replicaSet, head: cfg("2") + replicaSet, workloads: workloadsFake{"Deployment": {outside}},
			sees: map[string]plan.Sight{"rs envFrom": plan.SightStale, "outside envFrom": plan.SightStale}, stale: [2]int{1, 2},
			why: map[string]string{"rs": "a new template replaces no pod of a ReplicaSet", "outside": "outside the release"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := readersPlan(t, Input{PreviousManifest: tt.base, NextManifest: tt.head, RestartStale: !tt.off}, tt.workloads)
			var restarted []string
			for _, ch := range p.Restarts() {
				restarted = append(restarted, ch.ID.Name)
				if ch.Action != plan.ActionUpdate || ch.Class != plan.ClassRolling || ch.Rollout == nil || !slices.Equal(ch.RestartedFor, []string{"ConfigMap cfg"}) {
					t.Errorf("%s: %s %s rollout %v for %v, want a rolling update for ConfigMap cfg", ch.ID, ch.Action, ch.Class, ch.Rollout, ch.RestartedFor)
				}
				if v, _, _ := unstructured.NestedString(ch.After.Object, "spec", "template", "metadata", "annotations", plan.RestartedAtAnnotation); v != plan.RestartedAtPending || ch.Before == nil {
					t.Errorf("%s: predicted restartedAt %q (live object kept: %v), want %q", ch.ID, v, ch.Before != nil, plan.RestartedAtPending)
				}
				if last := ch.Reasons[len(ch.Reasons)-1]; last.Path != plan.RestartedAtPath || !strings.Contains(last.Message, "restarted for ConfigMap cfg (--restart-stale)") {
					t.Errorf("%s: last reason %+v, want the restart", ch.ID, last)
				}
			}
			if !slices.Equal(restarted, tt.restarted) {
				t.Errorf("restarted %v, want %v", restarted, tt.restarted)
			}
			for _, ch := range p.Changes {
				if ch.Action == plan.ActionNoop && (ch.Before != nil || ch.After != nil) {
					t.Errorf("%s: a noop keeps its objects", ch.ID)
				}
				if ch.ID.Name != "cfg" {
					continue
				}
				for _, u := range ch.Consumers {
					if want, ok := tt.sees[u.Workload.Name+" "+string(u.Via)]; ok && u.Sees != want {
						t.Errorf("%s: sees %q, want %q", u.Text(), u.Sees, want)
					}
					if u.Sees == plan.SightStale && u.NotRestarted != tt.why[u.Workload.Name] && !tt.off {
						t.Errorf("%s: not restarted because %q, want %q", u.Text(), u.NotRestarted, tt.why[u.Workload.Name])
					}
				}
			}
			if n, m := p.StaleConfig(); [2]int{n, m} != tt.stale {
				t.Errorf("StaleConfig %d, %d, want %v", n, m, tt.stale)
			}
		})
	}
}
