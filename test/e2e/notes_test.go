package e2e

import (
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// TestNotesAfterApply: after an apply the chart's NOTES are printed (on
// stderr, with the apply's other lines: stdout carries the report), as helm
// upgrade prints them, rendered for the new revision; --hide-notes hides
// them, and a --dry-run never prints them.
func TestNotesAfterApply(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	chart := func(version string) string {
		return writeChart(t, "noted", version, map[string]string{"cm.yaml": configMap(false, version),
			"NOTES.txt": "Revision {{ .Release.Revision }} of {{ .Chart.Version }} is live.\n"})
	}
	r := run(t, c, "noted", chart("1.0.0"), "-n", ns, "--install")
	if r.Code != 0 || !strings.Contains(r.Stderr, "NOTES:\nRevision 1 of 1.0.0 is live.\n") {
		t.Fatalf("install: exit %d, want the NOTES of revision 1\n%s", r.Code, r.Stderr)
	}
	if r := run(t, c, "noted", chart("1.1.0"), "-n", ns, "--dry-run"); strings.Contains(r.Stdout+r.Stderr, "NOTES:") {
		t.Errorf("--dry-run printed NOTES:\n%s", r.Stderr)
	}
	r = run(t, c, "noted", chart("1.1.0"), "-n", ns)
	if r.Code != 0 || !strings.Contains(r.Stderr, "NOTES:\nRevision 2 of 1.1.0 is live.\n") {
		t.Errorf("upgrade: exit %d, want the NOTES of revision 2\n%s", r.Code, r.Stderr)
	}
	r = run(t, c, "noted", chart("1.2.0"), "-n", ns, "--hide-notes")
	if r.Code != 0 || strings.Contains(r.Stdout+r.Stderr, "NOTES:") {
		t.Errorf("--hide-notes: exit %d, NOTES shown\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
}
