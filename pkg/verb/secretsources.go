package verb

// The Secret values the run's sanitiser learns outside the planner (hooks,
// stored revisions a failed render may echo) and the errors it cleans.

import (
	"errors"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/strvals"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/panics"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// addHookSecrets gives san the Secret values of the hooks of the new and
// the last revision: Helm keeps hooks out of the release manifest the
// planner reads, and a hook's failure (an admission policy denying a hook
// Secret) reaches Helm's error and the release description.
func addHookSecrets(san *redact.Sanitizer, res *render.Result) {
	for _, rel := range []*release.Release{res.Next, res.Previous} {
		if rel == nil {
			continue
		}
		for _, h := range rel.Hooks {
			if h != nil {
				san.AddManifest(h.Manifest)
			}
		}
	}
}

// Sanitize returns err without the release's Secret values, in its message
// and, for a panic, in its stack: what a run says on stderr goes through it.
func (c *Config) Sanitize(err error) error {
	var pe *panics.Error
	if errors.As(err, &pe) {
		pe.Stack = []byte(c.Sanitizer.String(string(pe.Stack)))
	}
	return c.Sanitizer.Error(err)
}

// renderFailed returns err, the failed render of release name, once the
// sanitiser knows the Secret values of the release's stored revisions
// (manifests and hooks): a template's `fail` can echo a value the release
// keeps in a Secret, and the render that would have told the planner
// about it failed.
func (c *Config) renderFailed(name string, err error) error {
	if hist, herr := releasestate.History(c.Helm.Releases, name); herr == nil {
		for _, rel := range hist {
			c.Sanitizer.AddManifest(rel.Manifest)
			for _, h := range rel.Hooks {
				if h != nil {
					c.Sanitizer.AddManifest(h.Manifest)
				}
			}
		}
	}
	return err
}

// addCredentials gives the sanitiser the chart repository credentials the
// run was given: --password, and the password of a --repo, CHART,
// --values or --set-file URL (https://USER:PASSWORD@host/…), as written
// and decoded. Helm's errors quote such a URL whole ("looks like
// "https://…" is not a valid chart repository", "failed to fetch
// https://…").
func (c *Config) addCredentials(chartRef string, opts render.Options) {
	c.Sanitizer.AddValue([]byte(opts.Repo.Password))
	urls := append([]string{chartRef, opts.Repo.RepoURL}, opts.Values.ValueFiles...)
	for _, kv := range opts.Values.FileValues {
		// Helm's own parsing of key=path pairs; a malformed one is Helm's
		// to refuse.
		_ = strvals.ParseIntoFile(kv, map[string]interface{}{}, func(rs []rune) (interface{}, error) {
			urls = append(urls, string(rs))
			return "", nil
		})
	}
	for _, u := range urls {
		for _, p := range redact.URLPasswords(u) {
			c.Sanitizer.AddValue([]byte(p))
		}
	}
}
