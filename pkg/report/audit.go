package report

import (
	"fmt"
	"strings"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// AuditLine summarises the plan and the acknowledgements for the release
// description that `helm history` shows, e.g. "safe-upgrade: 1
// recreate-required acked (StatefulSet/db via ack-file), 2 rolling, 3 in-place".
// A user-given description comes first.
func AuditLine(p *plan.Plan, userDescription string) string {
	var acked []string
	for _, c := range p.Changes {
		if c.Destructive && c.Acknowledged {
			acked = append(acked, fmt.Sprintf("%s %s via %s", c.Verdict(), c.ID, c.AckedBy))
		}
	}
	s := p.Summary()
	parts := []string{}
	if len(acked) > 0 {
		parts = append(parts, fmt.Sprintf("%d destructive acked (%s)", len(acked), strings.Join(acked, ", ")))
	}
	for _, n := range []struct {
		count int
		what  string
	}{{s.Create, "to create"}, {s.Rolling, "rolling"}, {s.InPlace, "in-place"}, {s.Delete, "to delete"}} {
		if n.count > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n.count, n.what))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "no changes")
	}
	line := "safe-upgrade: " + strings.Join(parts, ", ")
	if userDescription != "" {
		line = userDescription + " (" + line + ")"
	}
	return line
}
