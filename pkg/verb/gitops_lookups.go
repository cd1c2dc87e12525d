package verb

import (
	"fmt"
	"strings"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// refusedLookupsNote says which Secrets the pull request's chart looked up
// and was answered "not found" (render.SecretLookups), "" when none: a
// render that differs from helm-controller's for that reason, or fails
// ("you must provide your current passwords"), says why. The names come
// from the chart's templates: escaped.
func (c *Config) refusedLookupsNote(l *render.SecretLookups) string {
	refused := l.Refused()
	if len(refused) == 0 {
		return ""
	}
	return c.Sanitizer.Text(fmt.Sprintf("the chart's lookup of Secret %s was answered \"not found\": under gitops a pull request's chart reads no Secret of the cluster, whatever the job's credentials may read (--lookup-secrets NAMESPACE lets it read a namespace's)",
		strings.Join(refused, ", ")), redact.RecordLimit)
}
