package report

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// fastYAML writes the content of an object, or of a run of its top-level
// fields, byte for byte as yaml.v2's Marshal does, for content made of what
// Kubernetes objects are mostly made of: nested maps and lists, integers,
// finite floats, booleans, null, and strings whose YAML form is plain,
// double-quoted without escapes (numbers and the words YAML reads as
// booleans or null), or single-quoted (the redaction marker). It reports
// false for anything else (a string with a newline, a quote or a long
// line, a non-ASCII key...): the caller marshals with yaml.v2 then. yaml.v2 spends most of a report's time on allocations
// of its event machine; this writer appends to one buffer.
//
// The forms are yaml.v2's (go.yaml.in/yaml/v2, encode.go and emitterc.go):
// block mappings with keys in its keyList order, sequences not indented
// under their key, "{}" and "[]" for empty collections. TestFastYAML holds
// it to yaml.v2 on every kind of value it takes, TestFastYAMLRandom on
// random objects, TestFastYAMLRepositoryObjects on the repository's.
func fastYAML(content map[string]interface{}) ([]byte, bool) {
	if len(content) == 0 {
		return nil, false // yaml.v2 writes "{}"; rare enough to leave to it
	}
	w := yamlWriter{buf: make([]byte, 0, 512)}
	if !w.mapping(content, 0, false) {
		return nil, false
	}
	return w.buf, true
}

// yamlWidth is yaml.v2's best width: past this column, it breaks a
// scalar's line at a space.
const yamlWidth = 80

// yamlKeyMax is the longest key yaml.v2 writes as a simple key ("k: v");
// a longer one it writes as "? k".
const yamlKeyMax = 128

type yamlWriter struct{ buf []byte }

func (w *yamlWriter) indent(n int) {
	for range n {
		w.buf = append(w.buf, ' ')
	}
}

// mapping writes m, not empty, at indent; inline when its first key follows
// a sequence's "- " on the same line.
func (w *yamlWriter) mapping(m map[string]interface{}, indent int, inline bool) bool {
	keys, ok := yamlKeys(m)
	if !ok {
		return false
	}
	for i, k := range keys {
		if i > 0 || !inline {
			w.indent(indent)
		}
		start := len(w.buf)
		if !w.scalarString(k, indent, true) {
			return false
		}
		column := indent + len(w.buf) - start + 2 // after "key: "
		w.buf = append(w.buf, ':')
		switch v := m[k].(type) {
		case map[string]interface{}:
			if len(v) == 0 {
				w.buf = append(w.buf, " {}\n"...)
				continue
			}
			w.buf = append(w.buf, '\n')
			if !w.mapping(v, indent+2, false) {
				return false
			}
		case []interface{}:
			if len(v) == 0 {
				w.buf = append(w.buf, " []\n"...)
				continue
			}
			w.buf = append(w.buf, '\n')
			if !w.sequence(v, indent, false) { // yaml.v2 does not indent a sequence under its key
				return false
			}
		default:
			w.buf = append(w.buf, ' ')
			if !w.scalar(v, column) {
				return false
			}
			w.buf = append(w.buf, '\n')
		}
	}
	return true
}

// sequence writes s, not empty, at indent; inline when its first item
// follows an outer sequence's "- " on the same line.
func (w *yamlWriter) sequence(s []interface{}, indent int, inline bool) bool {
	for i, item := range s {
		if i > 0 || !inline {
			w.indent(indent)
		}
		w.buf = append(w.buf, "- "...)
		switch v := item.(type) {
		case map[string]interface{}:
			if len(v) == 0 {
				w.buf = append(w.buf, "{}\n"...)
				continue
			}
			if !w.mapping(v, indent+2, true) {
				return false
			}
		case []interface{}:
			if len(v) == 0 {
				w.buf = append(w.buf, "[]\n"...)
				continue
			}
			if !w.sequence(v, indent+2, true) {
				return false
			}
		default:
			if !w.scalar(v, indent+2) {
				return false
			}
			w.buf = append(w.buf, '\n')
		}
	}
	return true
}

// scalar writes v starting at column.
func (w *yamlWriter) scalar(v interface{}, column int) bool {
	switch x := v.(type) {
	case string:
		return w.scalarString(x, column, false)
	case int64:
		w.buf = strconv.AppendInt(w.buf, x, 10)
	case int:
		w.buf = strconv.AppendInt(w.buf, int64(x), 10)
	case int32:
		w.buf = strconv.AppendInt(w.buf, int64(x), 10)
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return false
		}
		// yaml.v2's floatv; a manifest's numbers decode as float64.
		w.buf = strconv.AppendFloat(w.buf, x, 'g', -1, 64)
	case bool:
		w.buf = strconv.AppendBool(w.buf, x)
	case nil:
		w.buf = append(w.buf, "null"...)
	default:
		return false // yaml.v2's forms of the rest are left to it
	}
	return true
}

// scalarString writes s, a key or a value starting at column, in the style
// yaml.v2 picks for it: double quotes for what a plain scalar would read as
// another type, plain otherwise, single quotes for the redaction marker.
// False for any string this writer does not know how yaml.v2 writes.
func (w *yamlWriter) scalarString(s string, column int, key bool) bool {
	if key && len(s) > yamlKeyMax {
		return false
	}
	switch {
	case s == "":
		w.buf = append(w.buf, `""`...)
	case yamlReserved[s]:
		w.quoted(s)
	case isDigit(s[0]):
		quoted, ok := digitLed(s)
		switch {
		case !ok:
			return false
		case quoted:
			w.quoted(s)
		default:
			w.buf = append(w.buf, s...) // no space: never folded
		}
	case plainString(s):
		if !key && column+len(s) > yamlWidth && strings.Contains(s, " ") {
			return false // yaml.v2 would fold it at a space
		}
		if key && strings.Contains(s, " ") {
			return false
		}
		w.buf = append(w.buf, s...)
	case isMaskedMarker(s):
		// "(sensitive: hmac-sha256:...)": ": " rules out the plain style,
		// and yaml.v2 single-quotes it, as long as it fits the line.
		if key || column+len(s)+2 > yamlWidth {
			return false
		}
		w.buf = append(w.buf, '\'')
		w.buf = append(w.buf, s...)
		w.buf = append(w.buf, '\'')
	default:
		return false
	}
	return true
}

// quoted writes s double-quoted: the strings resolve reads as another type
// than a string, which hold nothing to escape.
func (w *yamlWriter) quoted(s string) {
	w.buf = append(w.buf, '"')
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '"')
}

// yamlReserved are the strings starting with a letter that yaml.v2's
// resolve reads as a boolean or null when plain (its resolveMap).
var yamlReserved = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true,
	"n": true, "N": true, "no": true, "No": true, "NO": true,
	"true": true, "True": true, "TRUE": true,
	"false": true, "False": true, "FALSE": true,
	"on": true, "On": true, "ON": true,
	"off": true, "Off": true, "OFF": true,
	"null": true, "Null": true, "NULL": true,
}

// plainString reports whether yaml.v2 writes s plain: it starts with a
// letter, '/', '(' or '_' (resolve then reads it as a string unless it is
// reserved, and none starts an indicator) or is an option (see option); it
// holds only letters, digits, single spaces within it and ._/-=+@,()% ;
// and no ':' that a space or the end follows (": " is an indicator). Strings in yamlReserved are not
// passed here.
func plainString(s string) bool {
	first := s[0]
	if !isLetter(first) && first != '/' && first != '(' && first != '_' && !option(s) {
		return false
	}
	if s[len(s)-1] == ' ' || s[len(s)-1] == ':' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isLetter(c) || isDigit(c):
		case c == ' ':
			if s[i+1] == ' ' {
				return false
			}
		case c == ':':
			if s[i+1] == ' ' {
				return false
			}
		case c == '.', c == '_', c == '/', c == '-', c == '=', c == '+', c == '@', c == ',', c == '(', c == ')', c == '%':
		default:
			return false
		}
	}
	return true
}

// option reports whether s starts as a command-line option does: "-" or
// "--" and a letter (a sign and a digit would be a number, "---" a
// document's start).
func option(s string) bool {
	return len(s) > 1 && s[0] == '-' && (isLetter(s[1]) || len(s) > 2 && s[1] == '-' && isLetter(s[2]))
}

// digitLed tells how yaml.v2 writes s, which starts with a digit, as its
// resolve reads it plain: double-quoted when as a number (3, 0755, 0x1F,
// 1.5, 1e3), plain when as a string (1.27.3, 500m, 10Gi, 25%). ok is false
// for what this writer leaves to yaml.v2: other characters than letters,
// digits and .+-% , what may be a date (YYYY-), "0b" (resolve's second
// reading of binary), and a float too large to parse.
func digitLed(s string) (quoted, ok bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isDigit(c) && !isLetter(c) && c != '.' && c != '-' && c != '+' && c != '%' {
			return false, false
		}
	}
	if len(s) > 4 && isDigit(s[1]) && isDigit(s[2]) && isDigit(s[3]) && s[4] == '-' || strings.HasPrefix(s, "0b") {
		return false, false
	}
	if _, err := strconv.ParseInt(s, 0, 64); err == nil {
		return true, true
	}
	if _, err := strconv.ParseUint(s, 0, 64); err == nil {
		return true, true
	}
	if yamlFloat.MatchString(s) {
		_, err := strconv.ParseFloat(s, 64)
		return true, err == nil
	}
	return false, true
}

// yamlFloat is what resolve reads as a float (yaml.v2's yamlStyleFloat).
var yamlFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

func isMaskedMarker(s string) bool {
	const prefix, hexLen = "(sensitive: hmac-sha256:", 16
	if len(s) != len(prefix)+hexLen+1 || s[:len(prefix)] != prefix || s[len(s)-1] != ')' {
		return false
	}
	for _, c := range []byte(s[len(prefix) : len(s)-1]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// yamlKeys returns m's keys in yaml.v2's order (keyLess), or false when a
// key is not ASCII.
func yamlKeys(m map[string]interface{}) ([]string, bool) {
	keys := make([]string, 0, len(m))
	for k := range m {
		for i := 0; i < len(k); i++ {
			if k[i] >= 0x80 {
				return nil, false
			}
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if keyLess(a, b) {
			return -1
		}
		return 1 // keys differ, and keyLess orders any two that do
	})
	return keys, true
}

// keyLess is yaml.v2's keyList.Less for two ASCII strings: letters sort
// after every other character, runs of digits compare by their value (a
// run that continues a number with a leading zero compares as in
// yaml.v2), anything else by its byte.
func keyLess(a, b string) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		al, bl := isLetter(a[i]), isLetter(b[i]) // yamlKeys lets ASCII keys alone through
		if al && bl {
			return a[i] < b[i]
		}
		if al || bl {
			return bl
		}
		var an, bn int64
		if a[i] == '0' || b[i] == '0' {
			for j := i - 1; j >= 0 && isDigit(a[j]); j-- {
				if a[j] != '0' {
					an, bn = 1, 1
					break
				}
			}
		}
		ai, bi := i, i
		for ; ai < len(a) && isDigit(a[ai]); ai++ {
			an = an*10 + int64(a[ai]-'0')
		}
		for ; bi < len(b) && isDigit(b[bi]); bi++ {
			bn = bn*10 + int64(b[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return a[i] < b[i]
	}
	return len(a) < len(b)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
