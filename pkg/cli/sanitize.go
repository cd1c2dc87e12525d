package cli

import (
	"io"

	"k8s.io/client-go/rest"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
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
