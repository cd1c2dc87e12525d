package redact

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/injection"
)

func TestTextEscapes(t *testing.T) {
	tests := []struct{ in, want string }{
		{"\x1b]0;pwned\x07", `\x1b]0;pwned\a`},
		{"\x1b]52;c;Y3Vy\x1b\\", `\x1b]52;c;Y3Vy\x1b\`},
		{"\x1b[2J", `\x1b[2J`},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"a\x00b", `a\x00b`},
		{"a\rb\nc\bd", `a\rb\nc\bd`},
		{"a\x7fb", `a\x7fb`},
		{"a\u009b2J", `a\u009b2J`},
		{"a\x9b2J", `a\x9b2J`},
		{"a\xff\xfeb", `a\xff\xfeb`},
		{"user\u202egnp.exe", `user\u202egnp.exe`},
		{"a\u2066b\u2069\u200f", `a\u2066b\u2069\u200f`},
		{"tab\tkept, é ü 日本 kept", "tab\tkept, é ü 日本 kept"},
		{`C:\path \x1b`, `C:\path \x1b`},
	}
	for _, tc := range tests {
		if got := (*Sanitizer)(nil).Text(tc.in, MessageLimit); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRecordEscapesTabs: a release description is one cell of helm
// history's table, where a tab would forge a column; Record escapes it and
// everything Text escapes, and masks as Text does.
func TestRecordEscapesTabs(t *testing.T) {
	tests := []struct{ in, want string }{
		{"failed:\n\t* ConfigMap \"x\" is invalid", `failed:\n\t* ConfigMap "x" is invalid`},
		{"plain line", "plain line"},
		{"\x1b[2Jtab\there", `\x1b[2Jtab\there`},
	}
	for _, tc := range tests {
		if got := (*Sanitizer)(nil).Record(tc.in, RecordLimit); got != tc.want {
			t.Errorf("Record(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := (*Sanitizer)(nil).Record(strings.Repeat("\t", 100), 50); len(got) > 50+len(truncationMarker(100)) {
		t.Errorf("Record of 100 tabs cut at 50 is %d bytes: %q", len(got), got)
	}
}

func TestTextCorpus(t *testing.T) {
	const secret = "corpus-secret-value-7d1e"
	san := NewSanitizer(NewMasker())
	san.AddValue([]byte(secret))
	for _, tc := range injection.Corpus() {
		for _, text := range []string{tc.Text, secret + tc.Text + secret, strings.Repeat(tc.Text, 3000)} {
			got := san.Text(text, MessageLimit)
			if bad := injection.Unsafe(got); bad != "" {
				t.Errorf("%s: %s left in %.80q", tc.Name, bad, got)
			}
			if strings.Contains(got, secret) {
				t.Errorf("%s: secret left in %.80q", tc.Name, got)
			}
			if len(got) > MessageLimit+len(truncationMarker(len(text))) {
				t.Errorf("%s: %d bytes, more than the bound %d", tc.Name, len(got), MessageLimit)
			}
			if again := san.Text(got, RecordLimit); again != got {
				t.Errorf("%s: Text of its own result changed it: %.80q → %.80q", tc.Name, got, again)
			}
		}
	}
}

func TestTextBounds(t *testing.T) {
	long := strings.Repeat("x", 20000)
	got := (*Sanitizer)(nil).Text(long, MessageLimit)
	if want := strings.Repeat("x", MessageLimit) + fmt.Sprintf("…[+%d bytes]", 20000-MessageLimit); got != want {
		t.Errorf("20000-byte line: %d bytes ending %q", len(got), got[len(got)-20:])
	}
	if got := (*Sanitizer)(nil).Text(strings.Repeat("x", MessageLimit), MessageLimit); got != strings.Repeat("x", MessageLimit) {
		t.Errorf("a text of exactly the bound is cut: %q", got[len(got)-20:])
	}
	// An escape is never cut in two, nor a rune.
	got = (*Sanitizer)(nil).Text(strings.Repeat("x", 10)+"\x1b"+"日本", 12)
	if got != "xxxxxxxxxx…[+7 bytes]" {
		t.Errorf("cut inside an escape: %q", got)
	}
	got = (*Sanitizer)(nil).Text("xxxxxxxxxx日本", 12)
	if got != "xxxxxxxxxx…[+6 bytes]" || !utf8.ValidString(got) {
		t.Errorf("cut inside a rune: %q", got)
	}
	// The secret is masked before the cut: a value across the bound does
	// not leave its first half.
	const secret = "0123456789-secret-across-the-bound"
	san := NewSanitizer(NewMasker())
	san.AddValue([]byte(secret))
	if got := san.Text(strings.Repeat("y", 20)+secret, 30); strings.Contains(got, "0123456789") {
		t.Errorf("half a secret left at the cut: %q", got)
	}
}

// TestWarningsEscaped: the API server's warnings are printed through Text,
// one line each.
func TestWarningsEscaped(t *testing.T) {
	const secret = "warning-secret-value-8a"
	san := NewSanitizer(NewMasker())
	san.AddValue([]byte(secret))
	var out strings.Builder
	h := Warnings(&out, san, func(context.Context, string) bool { return false })
	h.HandleWarningHeaderWithContext(context.Background(), 299, "", secret+" "+injection.All())
	got := out.String()
	if bad := injection.UnsafeLines(got); bad != "" || strings.Count(got, "\n") != 1 || strings.Contains(got, secret) || !strings.HasPrefix(got, "Warning: (sensitive") {
		t.Errorf("warning printed as %.300q (%s)", got, bad)
	}
}

func TestTextNoLimit(t *testing.T) {
	long := strings.Repeat("x", 50000) + "\u202e"
	if got := (*Sanitizer)(nil).Text(long, NoLimit); got != strings.Repeat("x", 50000)+`\u202e` {
		t.Errorf("NoLimit cut or did not escape: %d bytes ending %q", len(got), got[len(got)-10:])
	}
}
