package redact

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

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

// SecretReads hands the sanitiser every Secret the tool reads from the API
// server through next, as it is read: the templates' `lookup` of a Secret
// above all, whose values a chart can echo in a render error (`fail`)
// before any plan knows them. Helm's release records and watches pass
// untouched, as do the reads whose caller hands their Secrets to the
// sanitiser itself (WithReadsSanitized: the planner's reads of the
// release's live objects, which would otherwise be decoded twice).
type SecretReads struct {
	Next      http.RoundTripper
	Sanitizer *Sanitizer
}

func (s SecretReads) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.Next.RoundTrip(req)
	if err != nil || ReadsSanitized(req.Context()) || !readsSecrets(req) || resp.StatusCode != http.StatusOK ||
		!strings.Contains(resp.Header.Get("Content-Type"), "json") {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", req.URL.Path, err)
	}
	s.Sanitizer.AddJSON(body)
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
