package redact

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of text from elsewhere (Text), in bytes of its printed form, the
// truncation marker aside.
const (
	// NameLimit bounds a name or an identity: an image, a Lease holder.
	NameLimit = 256
	// MessageLimit bounds one message: the API server's, a progress line,
	// why an object failed (its pod's status, an event, the last lines of
	// a container's log).
	MessageLimit = 2048
	// RecordLimit bounds a line that joins many: the Error: line, what a
	// release description records.
	RecordLimit = 16384
	// NoLimit escapes without cutting: for a diff under review, whose
	// lines must be shown whole.
	NoLimit = math.MaxInt
)

// Text is the one way text that came from elsewhere (the API server's
// messages, events, container logs and status, image names, a Lease's
// holder, Helm's errors and descriptions) reaches a terminal, a log, a
// report or a record: the release's Secret values masked (String, on the
// text as it came, so that a value is recognised whole), then every
// character that could act on a terminal or forge a line escaped, then the
// text cut to max bytes with a marker saying how much was left out
// ("…[+N bytes]", N counted in the text as it came). A nil Sanitizer masks
// nothing but still escapes and bounds.
//
// Escaped, in Go's notation: the C0 controls but the tab (ESC `\x1b`, NUL
// `\x00`, CR `\r`, LF `\n`, backspace `\b`, …), DEL `\x7f`, the C1
// controls U+0080–U+009F (`\u009b`), bytes that are not UTF-8 (`\xff`),
// and the bidirectional controls that reorder what a reader sees
// (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069: `\u202e`). A
// backslash is left as it is: the escaped form is for reading, not to be
// unquoted. The result holds none of these, so text already through Text
// can be joined into a longer line and passed through it once more (with
// a bound as large): nothing is escaped twice.
func (s *Sanitizer) Text(text string, max int) string {
	return escape(s.String(text), max, true)
}

// Record is Text for a record that is one cell of a table: a release's
// description, which `helm history` prints in a column. A tab there would
// forge a column, so it is escaped too (`\t`).
func (s *Sanitizer) Record(text string, max int) string {
	return escape(s.String(text), max, false)
}

// truncationMarker says how many bytes of the text were left out.
func truncationMarker(n int) string { return fmt.Sprintf("…[+%d bytes]", n) }

// escape is Text (keepTab) or Record without the masking.
func escape(text string, max int, keepTab bool) string {
	if len(text) <= max && plain(text, keepTab) {
		return text
	}
	var b strings.Builder
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		piece := text[i : i+size]
		switch {
		case r == utf8.RuneError && size == 1:
			piece = fmt.Sprintf(`\x%02x`, text[i])
		case r == '\t' && keepTab:
		case r < 0x20 || r == 0x7f:
			piece = strconv.QuoteRuneToASCII(r)
			piece = piece[1 : len(piece)-1]
		case r >= 0x80 && r <= 0x9f, bidiControl(r):
			piece = fmt.Sprintf(`\u%04x`, r)
		}
		if b.Len()+len(piece) > max {
			b.WriteString(truncationMarker(len(text) - i))
			return b.String()
		}
		b.WriteString(piece)
		i += size
	}
	return b.String()
}

// plain reports whether text is printable ASCII (and tabs, when kept)
// only: nothing to escape.
func plain(text string, keepTab bool) bool {
	for i := 0; i < len(text); i++ {
		if c := text[i]; (c < 0x20 && !(c == '\t' && keepTab)) || c >= 0x7f {
			return false
		}
	}
	return true
}

// bidiControl reports whether r reorders the text around it when shown
// (the Unicode bidirectional formatting characters): "Trojan Source".
func bidiControl(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// Lines is Text of each line of text, none cut (NoLimit), the line breaks
// kept: a diff under review, from a record or a plan, shown whole.
func (s *Sanitizer) Lines(text string) string {
	lines := strings.SplitAfter(text, "\n")
	for i, l := range lines {
		line, eol := strings.CutSuffix(l, "\n")
		if line = s.Text(line, NoLimit); eol {
			line += "\n"
		}
		lines[i] = line
	}
	return strings.Join(lines, "")
}

// JSON is raw, a JSON document from elsewhere (a record's stored report
// forms), with every string through Text (RecordLimit), a "diff" field's
// line by line, kept whole (Lines); nil when raw does not decode.
func (s *Sanitizer) JSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var v interface{}
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	v, _ = mapStrings(v, "", "", func(key, text string) string {
		if key == "diff" {
			return s.Lines(text)
		}
		return s.Text(text, RecordLimit)
	}, nil)
	out, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return out
}
