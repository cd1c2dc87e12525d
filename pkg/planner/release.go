package planner

import (
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// sanitizeRelease passes the texts of a plan's release that come from a
// record or a chart (its chart's name and version, read from a stored
// release record anyone who may write Secrets can forge, or from a pull
// request's chart; what syncs it, from a GitOps object) through the one
// printer, once every Secret value the plan read is known: every verb's
// header (text, Markdown, JSON, SARIF) prints them as they are here.
func sanitizeRelease(r plan.Release, san *redact.Sanitizer) plan.Release {
	r.Chart = san.Text(r.Chart, redact.NameLimit)
	r.SyncedBy = san.Text(r.SyncedBy, redact.NameLimit)
	return r
}
