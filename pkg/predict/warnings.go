package predict

import (
	"context"
	"regexp"
	"sync"
)

// unknownField matches the warning the API server returns for a field of
// the request its schema does not know (fieldValidation=Warn, the default
// of a create or patch that does not say): `unknown field "spec.replica"`.
var unknownField = regexp.MustCompile(`^unknown field "([^"]+)"`)

// UnknownField returns the field path a warning of the API server names as
// unknown, or "" when the warning says something else.
func UnknownField(text string) string {
	if m := unknownField.FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return ""
}

// Warnings collects the unknown-field warnings of the requests made with a
// context from WithWarnings: the planner asks about one object per
// context, so they are that object's.
type Warnings struct {
	mu    sync.Mutex
	texts []string
}

type warningsKey struct{}

// WithWarnings returns ctx with a collector that Collect fills.
func WithWarnings(ctx context.Context) (context.Context, *Warnings) {
	w := &Warnings{}
	return context.WithValue(ctx, warningsKey{}, w), w
}

// Collect records text, a warning of a response to a request made with
// ctx, when it names an unknown field and ctx carries a collector; it
// reports whether it did (the caller then does not print it: the plan
// names it on the object).
func Collect(ctx context.Context, text string) bool {
	w, ok := ctx.Value(warningsKey{}).(*Warnings)
	if !ok || UnknownField(text) == "" {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.texts {
		if t == text {
			return true
		}
	}
	w.texts = append(w.texts, text)
	return true
}

// Texts returns the warnings collected so far, in the order they came.
func (w *Warnings) Texts() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.texts...)
}
