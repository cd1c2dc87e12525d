package predict

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// marshalContent encodes an object's content as JSON for Helm's patch
// functions, which decode it again at once: any encoding of the same
// values will do, so the keys are written in map order instead of sorted,
// and the values an unstructured object holds (maps, lists, strings,
// int64, bools, null) are written without reflection. encoding/json's
// Marshal of the three objects of every patch was a third of the patch's
// time. Anything else (floats, whose form decides whether they decode as
// an integer, and any other type) is written by encoding/json itself, its
// errors included.
func marshalContent(content map[string]interface{}) ([]byte, error) {
	return appendJSON(make([]byte, 0, 1024), content)
}

func appendJSON(b []byte, v interface{}) ([]byte, error) {
	var err error
	switch t := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendString(b, t), nil
	case bool:
		return strconv.AppendBool(b, t), nil
	case int64:
		return strconv.AppendInt(b, t, 10), nil
	case map[string]interface{}:
		if t == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '{')
		first := true
		for k, x := range t {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(appendString(b, k), ':')
			if b, err = appendJSON(b, x); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case []interface{}:
		if t == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, x := range t {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendJSON(b, x); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, data...), nil
}

// appendString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 as U+FFFD (what a decoder
// makes of it, and what encoding/json writes).
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
