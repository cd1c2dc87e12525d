package redact

import (
	"context"
	"io"
	"strings"

	"k8s.io/client-go/rest"
)

// Warnings prints the API server's warnings (admission policies
// with the Warn action, deprecations) to out once each, as kubectl does,
// without the release's Secret values: a policy's messageExpression can
// echo request data in a warning too. One handler serves every client of a
// run, so its lines do not interleave.
// A warning that collect takes (the planner's, for one object of a
// dry-run: predict.Collect) is not printed; the planner names it on that
// object, and the plan's notes are sanitised too.
func Warnings(out io.Writer, san *Sanitizer, collect func(ctx context.Context, text string) bool) rest.WarningHandlerWithContext {
	return objectWarnings{print: rest.NewWarningWriter(sanitizingWriter{out: out, san: san}, rest.WarningWriterOptions{Deduplicate: true}), collect: collect}
}

// objectWarnings is a rest.WarningHandlerWithContext: the request's
// context says whether collect takes its warnings.
type objectWarnings struct {
	print   rest.WarningHandler
	collect func(ctx context.Context, text string) bool
}

func (w objectWarnings) HandleWarningHeaderWithContext(ctx context.Context, code int, agent, text string) {
	if !w.collect(ctx, text) {
		w.print.HandleWarningHeader(code, agent, text)
	}
}

// sanitizingWriter passes each write through the printer of text from
// elsewhere (Text); rest's WarningWriter writes one whole warning line at
// a time, its newline kept.
type sanitizingWriter struct {
	out io.Writer
	san *Sanitizer
}

func (w sanitizingWriter) Write(p []byte) (int, error) {
	line, eol := strings.CutSuffix(string(p), "\n")
	text := w.san.Text(line, MessageLimit)
	if eol {
		text += "\n"
	}
	if _, err := io.WriteString(w.out, text); err != nil {
		return 0, err
	}
	return len(p), nil
}
