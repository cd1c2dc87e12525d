package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// GitHubAnnotations writes a GitHub Actions workflow command per destructive
// change (an error when it still blocks, a warning when acknowledged), so a
// pull request shows them in its checks. Messages are escaped as the
// workflow-command format requires.
func GitHubAnnotations(w io.Writer, p *plan.Plan) error {
	for i := range p.Changes {
		c := &p.Changes[i]
		if !c.Destructive {
			continue
		}
		level, state, what := destructiveStatus(c)
		reason := what
		if len(c.Reasons) > 0 {
			reason = reasonText(c.Reasons[0])
		}
		title := fmt.Sprintf("safe-upgrade: %s %s", what, c.ID)
		if _, err := fmt.Fprintf(w, "::%s title=%s::%s (%s)\n", level, escapeProperty(title), escapeData(reason), escapeData(state)); err != nil {
			return err
		}
	}
	return nil
}

func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// destructiveStatus says how a destructive change is flagged: level error
// while it blocks, warning once acknowledged; state what it still needs;
// what its class, or its action when it has none.
func destructiveStatus(c *plan.Change) (level, state, what string) {
	level, state = "error", "not acknowledged: add "+c.AckFlag()
	switch {
	case c.Blocking:
		state = "cannot be acknowledged"
	case c.Acknowledged:
		level, state = "warning", "acknowledged"
	}
	return level, state, c.Verdict()
}
