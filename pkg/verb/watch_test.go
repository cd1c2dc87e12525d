package verb

import (
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/testkit/injection"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// TestOutcomeTextIsClean (issue 40): what the watch says of a failed
// object (its pods' status, events, log lines: here escape sequences, a
// 20 000-byte line and a Secret value) reaches the rollout summary, the
// error and the failed revision's description masked, escaped and bounded.
func TestOutcomeTextIsClean(t *testing.T) {
	const secret = "outcome-secret-value-51c"
	san := redact.NewSanitizer(redact.NewMasker())
	san.AddValue([]byte(secret))
	hostile := secret + " " + injection.All()
	out := &plan.Outcome{Failed: 2, Objects: []plan.ObjectOutcome{
		{ID: manifest.ObjectID{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web"}, State: plan.StateFailed,
			Detail: "0/1 updated, 0/1 ready", Reason: "pod web-1: image " + hostile + " cannot be pulled (ImagePullBackOff): " + hostile},
		{ID: manifest.ObjectID{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "api"}, State: plan.StateInProgress,
			Detail: hostile, Reason: "last log lines of container api: " + hostile},
	}}
	cleanOutcome(out, san)
	var summary strings.Builder
	writeOutcome(&summary, out, nil)
	line := san.Text("Rollout failed after the upgrade: "+failureLine(out), redact.RecordLimit)
	err := (&RolloutError{Release: "app", Revision: 2, Outcome: out}).Error()
	for what, text := range map[string]string{"summary": summary.String(), "description": line, "error": err} {
		if bad := injection.UnsafeLines(text); bad != "" {
			t.Errorf("%s: %s", what, bad)
		}
		if strings.Contains(text, secret) {
			t.Errorf("%s holds the Secret value", what)
		}
		if !strings.Contains(text, "…[+") || len(text) > 3*redact.MessageLimit+1000 {
			t.Errorf("%s not bounded (%d bytes): %.200q", what, len(text), text)
		}
	}
}

// TestOutcomeSummary: the summary after the watch has one line per object,
// whole (the live lines were cut to the terminal's width), failed and not
// ready first, then the objects the plan recreated, then the others, each
// group in the plan's order.
func TestOutcomeSummary(t *testing.T) {
	id := func(kind, name string) manifest.ObjectID {
		return manifest.ObjectID{Group: "apps", Kind: kind, Namespace: "ns", Name: name}
	}
	long := "pod db-0 cannot be scheduled (Unschedulable): 0/3 nodes are available: " + strings.Repeat("3 node(s) had volume node affinity conflict, ", 5)
	p := &plan.Plan{Changes: []plan.Change{
		{ID: id("Deployment", "web"), Class: plan.ClassRolling},
		{ID: id("StatefulSet", "db"), Class: plan.ClassRecreateRequired},
		{ID: id("StatefulSet", "cache"), Class: plan.ClassRecreateRequired},
		{ID: id("Deployment", "api"), Class: plan.ClassRolling},
		{ID: manifest.ObjectID{Kind: "ConfigMap", Namespace: "ns", Name: "cfg"}, Class: plan.ClassInPlace},
	}}
	out := &plan.Outcome{Failed: 2, Objects: []plan.ObjectOutcome{
		{ID: id("Deployment", "web"), State: plan.StateCurrent, Detail: "3/3 updated, 3/3 ready"},
		{ID: id("StatefulSet", "db"), State: plan.StateInProgress, Detail: "0/1 updated, 0/1 ready", Reason: long},
		{ID: id("StatefulSet", "cache"), State: plan.StateCurrent, Detail: "2/2 updated, 2/2 ready"},
		{ID: id("Deployment", "api"), State: plan.StateFailed, Detail: "1/2 updated, 2/2 ready, 1 old pending termination", Reason: "pod api-2: image api:9 cannot be pulled (ImagePullBackOff)"},
		{ID: manifest.ObjectID{Kind: "ConfigMap", Namespace: "ns", Name: "cfg"}, State: plan.StateCurrent},
	}}
	var got strings.Builder
	writeOutcome(&got, out, p)
	want := "Rollout: 3 of 5 object(s) current, 2 failed or not ready (0s)\n" +
		"  Deployment.apps/ns/api: failed: 1/2 updated, 2/2 ready, 1 old pending termination; pod api-2: image api:9 cannot be pulled (ImagePullBackOff)\n" +
		"  StatefulSet.apps/ns/db: in-progress: 0/1 updated, 0/1 ready; " + long + "\n" +
		"  StatefulSet.apps/ns/cache: current: 2/2 updated, 2/2 ready\n" +
		"  Deployment.apps/ns/web: current: 3/3 updated, 3/3 ready\n" +
		"  ConfigMap/ns/cfg: current\n" +
		"Outcome: 0 as predicted, 0 differ\n"
	if got.String() != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got.String(), want)
	}
}
