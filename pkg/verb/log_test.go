package verb

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/report"
)

// TestFromRecordHostile: a record is a ConfigMap anyone who may write
// them can write: every text of it, the diffs' lines included, reaches
// the log with the release's Secret values masked and what could act on a
// terminal escaped; a diff keeps its lines.
func TestFromRecordHostile(t *testing.T) {
	const value = "record-canary-value"
	san := redact.NewSanitizer(redact.NewMasker())
	san.AddValue([]byte(value))
	c := &Config{Sanitizer: san}
	b64 := base64.StdEncoding.EncodeToString([]byte(value))
	hostile := "\x1b]0;pwned\x07\x1b[2J" + value + "\u202e" + b64
	changes, err := json.Marshal([]map[string]interface{}{{"kind": "ConfigMap", "name": hostile,
		"reasons": []map[string]string{{"path": "data.x", "message": hostile}},
		"diff":    "--- a\n+++ b\n-x: " + hostile + "\n+x: y\n"}})
	if err != nil {
		t.Fatal(err)
	}
	rec := &releasestate.RevisionRecord{Operation: "upgrade", Helm: hostile, Changes: changes,
		By:     plan.Who{User: hostile, Command: hostile},
		Events: []plan.Event{{Kind: "recover", Line: hostile}}, Notes: []string{hostile}}
	var entry report.LogEntry
	c.fromRecord(&entry, rec)
	all, err := json.Marshal(entry)
	if err != nil {
		t.Fatal(err)
	}
	text := string(all) + string(entry.Changes)
	for _, bad := range []string{value, b64, "\x1b", "\u202e", `\u001b`} { // raw, or a raw ESC as JSON encodes it
		if strings.Contains(text, bad) {
			t.Errorf("the entry holds %q:\n%s", bad, text)
		}
	}
	var items []struct{ Diff string }
	if err := json.Unmarshal(entry.Changes, &items); err != nil || len(items) != 1 || strings.Count(items[0].Diff, "\n") != 4 {
		t.Errorf("the diff lost its lines: %+v, %v", items, err)
	}
}
