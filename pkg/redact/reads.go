package redact

import "context"

// sanitizedReadsKey marks a context: see WithReadsSanitized.
type sanitizedReadsKey struct{}

// WithReadsSanitized returns ctx marked as the context of reads whose
// caller hands every Secret it reads to the Sanitizer itself (the planner's
// reads of the release's live objects), so a transport that feeds the
// Sanitizer with the Secrets it sees read need not decode them a second
// time.
func WithReadsSanitized(ctx context.Context) context.Context {
	return context.WithValue(ctx, sanitizedReadsKey{}, true)
}

// ReadsSanitized reports whether ctx is marked by WithReadsSanitized.
func ReadsSanitized(ctx context.Context) bool {
	marked, _ := ctx.Value(sanitizedReadsKey{}).(bool)
	return marked
}
