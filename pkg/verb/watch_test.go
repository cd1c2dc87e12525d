package verb

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/injection"
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

// TestInterruptedWatch (issue 54): an interrupted watch says so, says
// that nothing failed because of it and how to look again, in the
// summary and the error, and nowhere that the watch timed out or the
// rollout failed.
func TestInterruptedWatch(t *testing.T) {
	out := &plan.Outcome{Interrupted: true, Failed: 1, Elapsed: 12 * time.Second, Objects: []plan.ObjectOutcome{
		{ID: manifest.ObjectID{Group: "apps", Kind: "StatefulSet", Namespace: "ns", Name: "db"}, State: plan.StateInProgress,
			Detail: "0/1 updated, 0/1 ready", Reason: "pod db-0 cannot be scheduled (Unschedulable)"},
		{ID: manifest.ObjectID{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "web"}, State: plan.StateCurrent},
	}}
	var summary strings.Builder
	writeOutcome(&summary, out, nil)
	err := (&InterruptedError{Program: "helm safe-upgrade", Release: "app", Namespace: "ns", Revision: 2, Status: "deployed", Outcome: out}).Error()
	for what, text := range map[string]string{"summary": summary.String(), "error": err} {
		if !strings.Contains(text, "interrupted") {
			t.Errorf("%s does not say the watch was interrupted:\n%s", what, text)
		}
		for _, wrong := range []string{"timed out", "rollout failed", "failed or not ready"} {
			if strings.Contains(text, wrong) {
				t.Errorf("%s says %q:\n%s", what, wrong, text)
			}
		}
	}
	for _, want := range []string{"with 1 object(s) not current yet", "Nothing failed because of the interruption", "stays deployed",
		"helm safe-upgrade status app -n ns"} {
		if !strings.Contains(err, want) {
			t.Errorf("error does not say %q:\n%s", want, err)
		}
	}
	if want := "Outcome: 0 as predicted, 0 differ; 1 not checked: not current when the watch was interrupted\n"; !strings.Contains(summary.String(), want) {
		t.Errorf("summary does not say %q:\n%s", want, summary.String())
	}
}

// TestHelmDescriptionBudget (issue 54): what the tool writes into Helm's
// description of a revision fits helm history's column budget, masked
// and escaped, and says where the whole text is; a short one is kept
// whole.
func TestHelmDescriptionBudget(t *testing.T) {
	const secret = "description-secret-value-9d"
	san := redact.NewSanitizer(redact.NewMasker())
	san.AddValue([]byte(secret))
	c := &Config{Sanitizer: san}
	long := "Rollout failed after the upgrade: StatefulSet.apps/ns/db in-progress: " + secret + " " + injection.All() + strings.Repeat("é", 300)
	got := c.helmDescription(long, "app")
	if len(got) > descriptionBudget || !strings.HasSuffix(got, "… (all of it: helm safe-upgrade log app)") ||
		!strings.HasPrefix(got, "Rollout failed after the upgrade: StatefulSet.apps/ns/db in-progress: ") || !utf8.ValidString(got) {
		t.Errorf("description (%d bytes): %q", len(got), got)
	}
	if strings.Contains(got, secret) || injection.UnsafeLines(got) != "" {
		t.Errorf("description not clean: %q", got)
	}
	if short := "Rollout failed after the upgrade: Deployment.apps/ns/web failed: pod web-1: image web:9 cannot be pulled"; c.helmDescription(short, "app") != short {
		t.Errorf("a short description was changed: %q", c.helmDescription(short, "app"))
	}
}

// TestTimedOutSaidOnce (issue 54): a watch that timed out with several
// objects not current says so once, in the error's and the summary's
// headline, not once per object in the line that joins them.
func TestTimedOutSaidOnce(t *testing.T) {
	id := func(kind, name string) manifest.ObjectID {
		return manifest.ObjectID{Group: "apps", Kind: kind, Namespace: "ns", Name: name}
	}
	out := &plan.Outcome{TimedOut: true, Failed: 2, Elapsed: 10 * time.Second, Objects: []plan.ObjectOutcome{
		{ID: id("StatefulSet", "db"), State: plan.StateInProgress, Reason: "pod db-0 cannot be scheduled (Unschedulable)"},
		{ID: id("Deployment", "web"), State: plan.StateInProgress, Detail: "1/2 updated, 2/2 ready"},
	}}
	var summary strings.Builder
	writeOutcome(&summary, out, nil)
	err := (&RolloutError{Release: "app", Revision: 2, Outcome: out}).Error()
	want := `release "app" revision 2 was applied, but its rollout failed: the watch timed out after 10s: ` +
		"StatefulSet.apps/ns/db in-progress: pod db-0 cannot be scheduled (Unschedulable); Deployment.apps/ns/web in-progress"
	if err != want {
		t.Errorf("error\n%s\nwant\n%s", err, want)
	}
	if got := strings.SplitN(summary.String(), "\n", 2)[0]; got != "Rollout: watch timed out after 10s: 0 of 2 object(s) current, 2 failed or not ready" {
		t.Errorf("summary's headline %q", got)
	}
	if n := strings.Count(summary.String(), "timed out"); n != 1 {
		t.Errorf("summary says the watch timed out %d times:\n%s", n, summary.String())
	}
}
