package redact

import (
	"net/url"
	"strings"
)

// URLPasswords are the password of a URL's user information
// (scheme://USER:PASSWORD@host/…) as written and, when it differs,
// decoded; none when raw has none.
func URLPasswords(raw string) []string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.User == nil {
		return nil
	}
	decoded, ok := u.User.Password()
	if !ok {
		return nil
	}
	out := []string{decoded}
	// As written: between the first ':' of the user information and its '@'.
	rest := raw[strings.Index(raw, "//")+2:]
	if at := strings.LastIndex(rest[:hostEnd(rest)], "@"); at >= 0 {
		if _, written, ok := strings.Cut(rest[:at], ":"); ok && written != decoded {
			out = append(out, written)
		}
	}
	return out
}

// hostEnd is where the authority of rest (a URL after its "//") ends.
func hostEnd(rest string) int {
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		return i
	}
	return len(rest)
}

// RedactURL is raw with its user information's password replaced by
// "xxxxx" (url.URL.Redacted), or raw itself when it is not a URL with one.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); !ok {
		return raw
	}
	return u.Redacted()
}
