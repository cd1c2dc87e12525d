package redact

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// MinSecretLen is the shortest secret value a Sanitizer removes from text.
// Shorter values ("1", "yes", "dev") occur everywhere in messages: removing
// them would shred every message while protecting values that any attacker
// guesses in a few thousand tries anyway. From four bytes on, a value is
// removed wherever it appears, even inside a longer word: removing too much
// is safe, leaving a fragment is not.
const MinSecretLen = 4

// Sanitizer removes the values of a release's Secrets from any text that
// came from the API server or from Helm (dry-run and apply errors,
// admission and webhook messages, hook failures, Helm's log and release
// description), before the text reaches an output, a log or a record. An
// admission policy's messageExpression, a webhook or a validation message
// can echo request data, so such text is never trusted to be free of
// secrets.
//
// Each value is removed in the forms it can take in a message: as is;
// base64-encoded (standard and URL alphabets, padded or not: Secret data as
// sent, and CEL's string(bytes)); quoted as JSON or Go quote it (a value
// with quotes, backslashes or newlines), once and twice (a message embedded
// in another JSON string); and, for a multi-line value such as a PEM key,
// each of its lines of MinSecretLen bytes or more. Each is replaced by the
// value's marker (Masker.Value). A value embedded inside a larger base64
// blob is not recognised.
//
// A Sanitizer is safe for concurrent use; values can be added while it is
// in use. The zero value is not usable: make one with NewSanitizer.
type Sanitizer struct {
	masker *Masker

	mu     sync.Mutex
	values map[string]bool
	// forms maps each form to its replacement, longest form first; nil
	// when values were added since it was built. copies replaces the forms
	// of the values of MinCopiedLen bytes or more (Object). heads holds
	// the first MinSecretLen bytes of every form (see mayHold).
	forms  []form
	heads  map[uint32]struct{}
	copies *strings.Replacer
}

type form struct {
	old, new string
	// long: the value is MinCopiedLen bytes or more.
	long bool
}

// MinCopiedLen is the shortest secret value Object masks in the fields of
// a non-Secret object. Shorter than MinSecretLen's messages: a short Secret
// value (a port, "true", a user name such as "admin") also appears, by
// chance, in unrelated fields of other objects (images, labels, flags), and
// masking it there would hide real changes from the review and report copies
// the chart never made; values that short are guessed in a few thousand tries
// anyway. A copied value of this length or more is masked wherever it is,
// even inside a longer string (a connection URL holding a password).
const MinCopiedLen = 6

// NewSanitizer returns an empty Sanitizer replacing values by their
// markers under m (nil: the unkeyed marker).
func NewSanitizer(m *Masker) *Sanitizer {
	return &Sanitizer{masker: m, values: map[string]bool{}}
}

// Add collects the secret values held by objs: the data (decoded) and
// stringData values of each Sensitive object, and those of the object
// recorded in any last-applied-configuration annotation. nil objects are
// skipped.
func (s *Sanitizer) Add(objs ...*unstructured.Unstructured) {
	for _, obj := range objs {
		if obj == nil {
			continue
		}
		if last, ok := obj.GetAnnotations()[LastAppliedAnnotation]; ok && !IsMasked(last) {
			var recorded map[string]interface{}
			if json.Unmarshal([]byte(last), &recorded) == nil {
				s.Add(&unstructured.Unstructured{Object: recorded})
			}
		}
		if !Sensitive(obj) {
			continue
		}
		for _, field := range maskedFields(obj) {
			s.addField(obj.Object[field], field == "data")
		}
	}
}

func (s *Sanitizer) addField(v interface{}, base64Data bool) {
	values, ok := v.(map[string]interface{})
	if !ok {
		s.addValue(v, false)
		return
	}
	for _, x := range values {
		s.addValue(x, base64Data)
	}
}

func (s *Sanitizer) addValue(v interface{}, base64Data bool) {
	str, ok := v.(string)
	if !ok {
		if v == nil {
			return
		}
		data, err := json.Marshal(v)
		if err != nil {
			return
		}
		str = string(data)
	}
	if IsMasked(str) {
		return
	}
	s.AddValue([]byte(str))
	if base64Data {
		if raw, err := base64.StdEncoding.DecodeString(str); err == nil {
			s.AddValue(raw)
		}
	}
}

// AddValue collects one secret value (ignored when shorter than
// MinSecretLen).
func (s *Sanitizer) AddValue(raw []byte) {
	if len(raw) < MinSecretLen {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.values[string(raw)] {
		s.values[string(raw)] = true
		s.forms = nil
	}
}

// build returns the forms to replace, longest first, and their heads.
func (s *Sanitizer) build() ([]form, map[uint32]struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.forms != nil || len(s.values) == 0 {
		return s.forms, s.heads
	}
	seen := map[string]bool{}
	var forms []form
	add := func(old, marker string, long bool) {
		if len(old) >= MinSecretLen && !seen[old] {
			seen[old] = true
			forms = append(forms, form{old, marker, long})
		}
	}
	for v := range s.values {
		marker := s.masker.Value([]byte(v))
		for _, f := range valueForms(v) {
			add(f, marker, len(v) >= MinCopiedLen)
		}
	}
	sort.Slice(forms, func(i, j int) bool {
		if len(forms[i].old) != len(forms[j].old) {
			return len(forms[i].old) > len(forms[j].old)
		}
		return forms[i].old < forms[j].old
	})
	// Longest first: at one position, strings.Replacer takes the first
	// form in this order, so a value wins over a line of it.
	var pairs []string
	heads := make(map[uint32]struct{}, len(forms))
	for _, f := range forms {
		if f.long {
			pairs = append(pairs, f.old, f.new)
		}
		heads[formHead(f.old)] = struct{}{}
	}
	s.forms, s.heads, s.copies = forms, heads, strings.NewReplacer(pairs...)
	return forms, heads
}

// headLen is how many first bytes of a form mayHold looks for: every form
// is MinSecretLen bytes or more.
const headLen = 4

// formHead is the first headLen bytes of s, len(s) >= headLen.
func formHead(s string) uint32 {
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// mayHold reports whether msg may contain one of the forms whose heads
// are given: false only when no position of msg starts with a form's
// first bytes, so that none is in it. One pass over msg instead of one
// search per form: a release's Secrets give thousands of forms, and every
// reason of every change is passed through String.
func mayHold(msg string, heads map[uint32]struct{}) bool {
	for i := 0; i+headLen <= len(msg); i++ {
		if _, ok := heads[formHead(msg[i:])]; ok {
			return true
		}
	}
	return false
}

// copier returns the replacer of the values of MinCopiedLen bytes or more,
// nil when there are none.
func (s *Sanitizer) copier() *strings.Replacer {
	if forms, _ := s.build(); len(forms) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.copies
}

// Object returns obj with every collected secret value of MinCopiedLen
// bytes or more masked in its string fields, in the forms String removes
// (a value copied into a ConfigMap, an env var, an argument, an annotation,
// plain or base64), and the paths of the fields where it masked one
// (data.url, spec.template.spec.containers[0].env[1].value). obj is not
// changed; it is returned as it is when it holds none. A nil Sanitizer or
// object masks nothing. Use it for objects that are not Secrets, whose
// values Masker.Object masks whole.
func (s *Sanitizer) Object(obj *unstructured.Unstructured) (*unstructured.Unstructured, []string) {
	if s == nil || obj == nil {
		return obj, nil
	}
	r := s.copier()
	if r == nil {
		return obj, nil
	}
	var paths []string
	content, changed := mapStrings(obj.Object, "", "", func(_, s string) string { return r.Replace(s) }, &paths)
	if !changed {
		return obj, nil
	}
	return &unstructured.Unstructured{Object: content.(map[string]interface{})}, paths
}

// mapStrings returns v with f applied to every string in it, copying only
// the maps and slices on the way to a change: the one walk of a decoded
// JSON value that changes its strings. key is the name of the field that
// holds v (an item of a list: the list's); path is v's field path, and
// paths, when not nil, gets the path of every string f changed.
func mapStrings(v interface{}, key, path string, f func(key, s string) string, paths *[]string) (interface{}, bool) {
	switch t := v.(type) {
	case string:
		mapped := f(key, t)
		if mapped == t {
			return v, false
		}
		if paths != nil {
			*paths = append(*paths, path)
		}
		return mapped, true
	case map[string]interface{}:
		var out map[string]interface{}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys) // paths in a stable order
		for _, k := range keys {
			sub := k
			if path != "" {
				sub = path + "." + k
			}
			x, changed := mapStrings(t[k], k, sub, f, paths)
			if !changed {
				continue
			}
			if out == nil {
				out = make(map[string]interface{}, len(t))
				for k2, x2 := range t {
					out[k2] = x2
				}
			}
			out[k] = x
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []interface{}:
		var out []interface{}
		for i, x := range t {
			sub := path
			if paths != nil {
				sub = fmt.Sprintf("%s[%d]", path, i)
			}
			mapped, changed := mapStrings(x, key, sub, f, paths)
			if !changed {
				continue
			}
			if out == nil {
				out = append([]interface{}(nil), t...)
			}
			out[i] = mapped
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	return v, false
}

// valueForms returns the forms v can take in a message.
func valueForms(v string) []string {
	raw := []byte(v)
	out := []string{v,
		base64.StdEncoding.EncodeToString(raw), base64.RawStdEncoding.EncodeToString(raw),
		base64.URLEncoding.EncodeToString(raw), base64.RawURLEncoding.EncodeToString(raw)}
	jsonOnce := jsonQuoted(v)
	out = append(out, jsonOnce, jsonQuoted(jsonOnce), goQuoted(v), goQuoted(goQuoted(v)))
	if strings.Contains(v, "\n") {
		for _, line := range strings.Split(v, "\n") {
			out = append(out, strings.TrimRight(line, "\r"))
		}
	}
	return out
}

// jsonQuoted returns v as JSON quotes it, without the quotes.
func jsonQuoted(v string) string {
	data, _ := json.Marshal(v)
	return string(data[1 : len(data)-1])
}

// goQuoted returns v as strconv.Quote (%q) quotes it, without the quotes.
func goQuoted(v string) string {
	q := strconv.Quote(v)
	return q[1 : len(q)-1]
}

// String returns msg with every collected value removed. nil returns msg.
func (s *Sanitizer) String(msg string) string {
	if s == nil {
		return msg
	}
	forms, heads := s.build()
	// Where no form is in msg, the loop below replaces nothing; where one
	// is, it runs as it is (a replacement can make a later form appear).
	if !mayHold(msg, heads) {
		return msg
	}
	for _, f := range forms {
		if strings.Contains(msg, f.old) {
			msg = strings.ReplaceAll(msg, f.old, f.new)
		}
	}
	return msg
}

// Error returns err with its message sanitised (nil stays nil). The result
// unwraps to err, so errors.Is and errors.As still classify it; print only
// its Error(), never a message read from what it wraps.
func (s *Sanitizer) Error(err error) error {
	if err == nil || s == nil {
		return err
	}
	msg := err.Error()
	clean := s.String(msg)
	if clean == msg {
		return err
	}
	return &sanitizedError{msg: clean, err: err}
}

type sanitizedError struct {
	msg string
	err error
}

func (e *sanitizedError) Error() string { return e.msg }
func (e *sanitizedError) Unwrap() error { return e.err }

// Logf returns a log function that passes each line through Text before
// handing it to logf (nil: a log function that discards): Helm's log
// carries the API server's errors.
func (s *Sanitizer) Logf(logf func(string, ...interface{})) func(string, ...interface{}) {
	if logf == nil {
		return func(string, ...interface{}) {}
	}
	return func(format string, args ...interface{}) {
		logf("%s", s.Text(fmt.Sprintf(format, args...), RecordLimit))
	}
}

// AddManifest collects the secret values of the objects of a rendered
// manifest ("---"-separated YAML documents, Lists included), such as the
// hooks Helm keeps apart from the release manifest. A document that does
// not parse is skipped: it cannot be applied either.
func (s *Sanitizer) AddManifest(text string) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(text)))
	for {
		doc, err := reader.Read()
		if err != nil {
			return // io.EOF, or a stream that cannot be read further
		}
		var content map[string]interface{}
		if yaml.Unmarshal(doc, &content) != nil || content == nil {
			continue
		}
		s.addContent(content)
	}
}

// AddJSON collects the secret values of an object or a list as the API
// server returns them (JSON). Anything else is skipped.
func (s *Sanitizer) AddJSON(data []byte) {
	var content map[string]interface{}
	if json.Unmarshal(data, &content) == nil && content != nil {
		s.addContent(content)
	}
}

// addContent adds an object, and the items of a list.
func (s *Sanitizer) addContent(content map[string]interface{}) {
	s.Add(&unstructured.Unstructured{Object: content})
	items, _ := content["items"].([]interface{})
	for _, it := range items {
		if item, ok := it.(map[string]interface{}); ok {
			s.addContent(item)
		}
	}
}
