package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// fixtureLog is a log of three revisions of the fixture release: one the
// tool applied (its record: who, the fixture plan's changes with their
// acknowledgement, a recreate, an outcome that failed), one recovered,
// and one computed from the stored manifests (plain helm).
func fixtureLog(t *testing.T) []LogEntry {
	t.Helper()
	applied := fixturePlan()
	applied.Outcome = &plan.Outcome{AsPredicted: 1, Differ: 0, Failed: 1, Objects: []plan.ObjectOutcome{
		{ID: id("apps", "Deployment", "web"), State: plan.StateFailed, Reason: "image nginx:crash: CrashLoopBackOff, last exited with code 1"},
		{ID: id("apps", "StatefulSet", "postgres"), State: plan.StateCurrent, Predicted: "pods and claims kept", Observed: "2 of 2 pod(s) kept", AsPredicted: true},
	}}
	for i := range applied.Changes {
		if applied.Changes[i].ID.Kind == "StatefulSet" {
			applied.Changes[i].Acknowledged, applied.Changes[i].AckedBy = true, "ack-file"
		}
	}
	form := func(p *plan.Plan) (s, c, o json.RawMessage) {
		s, c, o, err := RecordForm(p, 0)
		if err != nil {
			t.Fatal(err)
		}
		return s, c, o
	}
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	e3 := LogEntry{Revision: 9, Updated: at.Add(2 * time.Hour), Chart: "shop-2.1.0", AppVersion: "2.1", Status: "deployed",
		Description: "Upgrade complete", Operation: "upgrade", Computed: true}
	e3.Summary, e3.Changes, _ = form(rollbackPlan())
	e2 := LogEntry{Revision: 8, Updated: at.Add(time.Hour), Chart: "shop-2.0.0", AppVersion: "2.0", Status: "failed",
		Description: "Rollout failed after the upgrade: Deployment.apps/shop/web failed", Operation: "upgrade",
		By:   plan.Who{User: "alice", Caller: "helmfile", Command: "helm safe-upgrade shop ./shop --ack-file", Commit: "0123abc", Pipeline: "42"},
		Helm: "applied: deployed", Recreated: []string{"StatefulSet.apps/shop/postgres"}}
	e2.Summary, e2.Changes, e2.Outcome = form(applied)
	e1 := LogEntry{Revision: 7, Updated: at, Chart: "shop-1.0.0", Status: "failed", Operation: "upgrade", Computed: true,
		Why: "the apply did not record its changes (interrupted)", Description: "safe-upgrade --recover: the apply was interrupted",
		Events: []plan.Event{{Kind: "recover", At: at.Add(30 * time.Minute), By: plan.Who{User: "bob"}, Line: "safe-upgrade --recover: the apply was interrupted; restored StatefulSet.apps/shop/postgres"}}}
	e1.Summary, e1.Changes, _ = form(&plan.Plan{Release: plan.Release{Name: "shop", Namespace: "shop"}})
	return []LogEntry{e3, e2, e1}
}

// TestLogGolden: every format of the log, with and without -p.
func TestLogGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		opts   LogOptions
	}{
		{"log.txt", LogOptions{Format: FormatText}},
		{"log-p.txt", LogOptions{Format: FormatText, Patch: true}},
		{"log-p.json", LogOptions{Format: FormatJSON, Patch: true}},
		{"log-p.md", LogOptions{Format: FormatMarkdown, Patch: true}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteLog(&buf, "shop", "shop", fixtureLog(t), tc.opts); err != nil {
				t.Fatal(err)
			}
			assertGolden(t, tc.golden, buf.Bytes())
		})
	}
}

// TestLogWithoutPatchHasNoDiffs: without -p, no format carries a diff;
// the counts, acknowledgements and outcome are there.
func TestLogWithoutPatchHasNoDiffs(t *testing.T) {
	for _, format := range []string{FormatText, FormatJSON, FormatMarkdown} {
		var buf bytes.Buffer
		if err := WriteLog(&buf, "shop", "shop", fixtureLog(t), LogOptions{Format: format}); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if strings.Contains(out, "+++ ") || strings.Contains(out, "storage: 20Gi") {
			t.Errorf("%s without -p holds a diff:\n%s", format, out)
		}
		for _, want := range []string{"ack-file", "9f2c41d7e0ab", "postgres"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s without -p does not say %q:\n%s", format, want, out)
			}
		}
	}
}

// TestLogNoSecretValues: a Secret value the stages before failed to mask
// is masked in the record's form, as in the report (guard), so no format
// of the log shows it.
func TestLogNoSecretValues(t *testing.T) {
	raw := "cmF3LXBhc3N3b3Jk" // base64 of raw-password
	p := fixturePlan()
	for i := range p.Changes {
		if p.Changes[i].ID.Kind == "Secret" {
			p.Changes[i].After = secret(raw)
		}
	}
	s, c, _, err := RecordForm(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	entries := []LogEntry{{Revision: 2, Status: "deployed", Summary: s, Changes: c}}
	for _, format := range []string{FormatText, FormatJSON, FormatMarkdown} {
		var buf bytes.Buffer
		if err := WriteLog(&buf, "shop", "shop", entries, LogOptions{Format: format, Patch: true}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "db-credentials") {
			t.Fatalf("%s does not show the Secret's change:\n%s", format, buf.String())
		}
		for _, v := range []string{raw, "raw-password"} {
			if strings.Contains(buf.String(), v) {
				t.Errorf("%s holds %q", format, v)
			}
		}
	}
}

// TestLogInterruptedRollout (issue 54): a revision whose watch was
// interrupted reads so in `log`, not as a failed rollout.
func TestLogInterruptedRollout(t *testing.T) {
	o := toJSONOutcome(&plan.Outcome{Interrupted: true, Failed: 1, Elapsed: 12 * time.Second, Objects: []plan.ObjectOutcome{
		{ID: manifest.ObjectID{Group: "apps", Kind: "StatefulSet", Namespace: "shop", Name: "db"}, State: plan.StateInProgress,
			Reason: "pod db-0 cannot be scheduled (Unschedulable)"},
		{ID: manifest.ObjectID{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}, State: plan.StateInProgress}}})
	want := "watch interrupted after 12s, 1 not current yet (StatefulSet/shop/db in-progress: pod db-0 cannot be scheduled (Unschedulable); Deployment/shop/web in-progress); 0 as predicted, 0 differ"
	if got := outcomeLine(o); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
