package upgrade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	"k8s.io/client-go/rest"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/panics"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// sanitizedWarnings prints the API server's warnings (admission policies
// with the Warn action, deprecations) to out once each, as kubectl does,
// without the release's Secret values: a policy's messageExpression can
// echo request data in a warning too. One handler serves every client of a
// run, so its lines do not interleave.
// A warning naming an unknown field of a dry-run the planner makes for one
// object is not printed but handed to the planner (predict.Collect), which
// names it on that object; the plan's notes are sanitised too.
func sanitizedWarnings(out io.Writer, san *redact.Sanitizer) objectWarnings {
	return objectWarnings{rest.NewWarningWriter(sanitizingWriter{out: out, san: san}, rest.WarningWriterOptions{Deduplicate: true})}
}

// objectWarnings is a rest.WarningHandlerWithContext: the request's
// context says whether the planner collects its warnings.
type objectWarnings struct {
	print rest.WarningHandler
}

func (w objectWarnings) HandleWarningHeaderWithContext(ctx context.Context, code int, agent, text string) {
	if !predict.Collect(ctx, text) {
		w.print.HandleWarningHeader(code, agent, text)
	}
}

// sanitizingWriter sanitises each write; rest's WarningWriter writes one
// whole warning line at a time.
type sanitizingWriter struct {
	out io.Writer
	san *redact.Sanitizer
}

func (w sanitizingWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.out, w.san.String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

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

// Panicked returns the error of a value r recovered from a panic: one line
// ("internal error: ..."), with the stack for PanicStack. Call it in the
// deferred function that recovered, so the stack is the panic's.
func Panicked(r interface{}) error { return panics.New(r) }

// PanicStack returns the stack of the panic err carries (recovered by
// Panicked, or in one of the tool's goroutines), if it carries one.
func PanicStack(err error) ([]byte, bool) {
	var pe *panics.Error
	if errors.As(err, &pe) {
		return pe.Stack, true
	}
	return nil, false
}

// secretReads hands the sanitiser every Secret the tool reads from the API
// server through next, as it is read: the templates' `lookup` of a Secret
// above all, whose values a chart can echo in a render error (`fail`)
// before any plan knows them. Helm's release records and watches pass
// untouched, as do the reads whose caller hands their Secrets to the
// sanitiser itself (redact.WithReadsSanitized: the planner's reads of the
// release's live objects, which would otherwise be decoded twice).
type secretReads struct {
	next http.RoundTripper
	san  *redact.Sanitizer
}

func (s secretReads) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(req)
	if err != nil || redact.ReadsSanitized(req.Context()) || !readsSecrets(req) || resp.StatusCode != http.StatusOK ||
		!strings.Contains(resp.Header.Get("Content-Type"), "json") {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", req.URL.Path, err)
	}
	s.san.AddJSON(body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// readsSecrets reports whether req reads core Secrets (GET, LIST; not a
// watch, not Helm's release storage, whose records hold the release, not
// values the server will echo).
func readsSecrets(req *http.Request) bool {
	q := req.URL.Query()
	if req.Method != http.MethodGet || q.Get("watch") == "true" || q.Get("watch") == "1" || strings.Contains(q.Get("labelSelector"), "owner=helm") {
		return false
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	for i := 0; i+2 < len(parts); i++ { // a proxy may prefix the API's path
		if parts[i] != "api" || parts[i+1] != "v1" {
			continue
		}
		rest := parts[i+2:]
		if len(rest) > 2 && rest[0] == "namespaces" {
			rest = rest[2:]
		}
		return rest[0] == "secrets" && (len(rest) == 1 || len(rest) == 2 && !strings.HasPrefix(rest[1], "sh.helm.release.v1."))
	}
	return false
}

// renderFailed returns err, the failed render of release name, once the
// sanitiser knows the Secret values of the release's stored revisions
// (manifests and hooks): a template's `fail` can echo a value the release
// keeps in a Secret, and the render that would have told the planner
// about it failed.
func (c *Config) renderFailed(name string, err error) error {
	if hist, herr := render.History(c.Helm.Releases, name); herr == nil {
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
