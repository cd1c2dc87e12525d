package upgrade

import (
	"errors"
	"io"

	"helm.sh/helm/v3/pkg/release"
	"k8s.io/client-go/rest"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/panics"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// sanitizedWarnings prints the API server's warnings (admission policies
// with the Warn action, deprecations) to out once each, as kubectl does,
// without the release's Secret values: a policy's messageExpression can
// echo request data in a warning too. One handler serves every client of a
// run, so its lines do not interleave.
func sanitizedWarnings(out io.Writer, san *redact.Sanitizer) rest.WarningHandler {
	return rest.NewWarningWriter(sanitizingWriter{out: out, san: san}, rest.WarningWriterOptions{Deduplicate: true})
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
