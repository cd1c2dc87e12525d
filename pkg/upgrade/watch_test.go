package upgrade

import (
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/injection"
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
			Detail: "0/1 replaced, 0/1 ready", Reason: "pod web-1: image " + hostile + " cannot be pulled (ImagePullBackOff): " + hostile},
		{ID: manifest.ObjectID{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "api"}, State: plan.StateInProgress,
			Detail: hostile, Reason: "last log lines of container api: " + hostile},
	}}
	cleanOutcome(out, san)
	var summary strings.Builder
	writeOutcome(&summary, out)
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
