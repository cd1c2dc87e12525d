package redact

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestSanitizer(t *testing.T) {
	const pw = `s3cr3t-"pass"\word`
	const pem = "-----BEGIN KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\nKUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQ==\n-----END KEY-----"
	secret := object("v1", "Secret", map[string]interface{}{
		"data":       map[string]interface{}{"pw": base64.StdEncoding.EncodeToString([]byte(pw)), "key": base64.StdEncoding.EncodeToString([]byte(pem)), "tiny": base64.StdEncoding.EncodeToString([]byte("abc"))},
		"stringData": map[string]interface{}{"token": "tok-plain-value"},
	})
	lastApplied, _ := json.Marshal(map[string]interface{}{"apiVersion": "v1", "kind": "Secret", "stringData": map[string]interface{}{"old": "older-value-in-annotation"}})
	annotated := object("v1", "ConfigMap", map[string]interface{}{"data": map[string]interface{}{"shown": "not-a-secret"}})
	annotated.SetAnnotations(map[string]string{LastAppliedAnnotation: string(lastApplied)})
	odd := object("example.com/v1", "secret", map[string]interface{}{"data": "whole-field-value"})

	m := NewMasker()
	s := NewSanitizer(m)
	s.Add(secret, annotated, odd, nil)
	jsonQ := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	tests := []struct {
		name, msg string
		gone      []string
	}{
		{"plain", "bad password: " + pw, []string{pw}},
		{"base64", "bad password: " + base64.StdEncoding.EncodeToString([]byte(pw)), []string{base64.StdEncoding.EncodeToString([]byte(pw))}},
		{"base64 raw", "x=" + base64.RawStdEncoding.EncodeToString([]byte(pw)), []string{base64.RawStdEncoding.EncodeToString([]byte(pw))}},
		{"base64 url", "x=" + base64.URLEncoding.EncodeToString([]byte(pw)) + " " + base64.RawURLEncoding.EncodeToString([]byte(pw)), []string{base64.RawURLEncoding.EncodeToString([]byte(pw))}},
		{"JSON quoted", `{"message":` + jsonQ(pw) + `}`, []string{strings.Trim(jsonQ(pw), `"`)}},
		{"JSON quoted twice", jsonQ(`{"message":` + jsonQ(pw) + `}`), []string{"pass"}},
		{"Go quoted", fmt.Sprintf("Invalid value: %q", pw), []string{strings.Trim(strconv.Quote(pw), `"`)}},
		{"stringData", "token tok-plain-value refused", []string{"tok-plain-value"}},
		{"multi-line value, one line of it", "key: MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu is bad", []string{"MIIBOgIB"}},
		{"multi-line value, JSON quoted", "key " + jsonQ(pem), []string{"MIIBOgIB", "KUpRKfFL"}},
		{"last-applied annotation", "old=older-value-in-annotation", []string{"older-value-in-annotation"}},
		{"malformed data of an odd Secret", "got whole-field-value", []string{"whole-field-value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := s.String(tt.msg)
			for _, g := range tt.gone {
				if strings.Contains(got, g) {
					t.Errorf("%q still holds %q", got, g)
				}
			}
			if !strings.Contains(got, "(sensitive: hmac-sha256:") {
				t.Errorf("%q: no marker where the value was", got)
			}
		})
	}
	for _, keep := range []string{"abc is short", "not-a-secret stays", "no secret here"} {
		if got := s.String(keep); got != keep {
			t.Errorf("%q became %q", keep, got)
		}
	}
	if got, want := s.String("bad "+pw), "bad "+m.Value([]byte(pw)); got != want {
		t.Errorf("the marker is not the value's: %q, want %q", got, want)
	}
}

func TestSanitizerErrorsAndLogs(t *testing.T) {
	s := NewSanitizer(nil)
	s.AddValue([]byte("hunter22"))
	base := errors.New("denied: hunter22")
	err := s.Error(fmt.Errorf("apply: %w", base))
	if strings.Contains(err.Error(), "hunter22") || !errors.Is(err, base) {
		t.Errorf("Error: %q (unwraps to base: %v)", err, errors.Is(err, base))
	}
	if s.Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
	clean := errors.New("nothing to hide")
	if s.Error(clean) != clean {
		t.Error("a clean error was wrapped")
	}
	var logged string
	s.Logf(func(f string, a ...interface{}) { logged = fmt.Sprintf(f, a...) })("webhook said %s", "hunter22")
	if logged != "webhook said (sensitive)" {
		t.Errorf("logged %q", logged)
	}
	var nilSanitizer *Sanitizer
	if nilSanitizer.String("x") != "x" || nilSanitizer.Error(clean) != clean {
		t.Error("a nil Sanitizer changed its input")
	}
	// Values added later are removed from later messages.
	s.Add(&unstructured.Unstructured{Object: map[string]interface{}{"kind": "Secret", "stringData": map[string]interface{}{"k": "added-late"}}})
	if got := s.String("added-late hunter22"); got != "(sensitive) (sensitive)" {
		t.Errorf("got %q", got)
	}
}

func TestSanitizerAddManifest(t *testing.T) {
	s := NewSanitizer(nil)
	s.AddManifest("# Source: hooks/secret.yaml\napiVersion: v1\nkind: Secret\nmetadata:\n  name: hook\n  annotations: {helm.sh/hook: pre-upgrade}\nstringData: {pw: hook-value-1}\n" +
		"---\nnot: [valid\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: secret, metadata: {name: x}, data: {pw: " + base64.StdEncoding.EncodeToString([]byte("listed-value-2")) + "}}\n")
	got := s.String("denied hook-value-1 and listed-value-2")
	if strings.Contains(got, "hook-value-1") || strings.Contains(got, "listed-value-2") {
		t.Errorf("got %q", got)
	}
}

// TestSanitizerObject: a Secret's value copied into another object is
// masked wherever it appears in a string field (inside a longer string,
// base64-encoded) and the fields are named; a value shorter than
// MinCopiedLen is left as it is; the object given is not changed.
func TestSanitizerObject(t *testing.T) {
	const pw, short = "s3cr3t-pass", "ab12x"
	s := NewSanitizer(NewMasker())
	s.Add(object("v1", "Secret", map[string]interface{}{"stringData": map[string]interface{}{"pw": pw, "port": short}}))
	tests := []struct {
		name      string
		fields    map[string]interface{}
		wantPaths []string
	}{
		{"in a connection URL", map[string]interface{}{"data": map[string]interface{}{"url": "postgres://app:" + pw + "@db/app", "port": short}}, []string{"data.url"}},
		{"base64 in an annotation", map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]interface{}{"a": base64.StdEncoding.EncodeToString([]byte(pw))}}}, []string{"metadata.annotations.a"}},
		{"in a container's env and command", map[string]interface{}{"spec": map[string]interface{}{"containers": []interface{}{map[string]interface{}{
			"command": []interface{}{"run", "--pw=" + pw}, "env": []interface{}{map[string]interface{}{"name": "PW", "value": pw}}}}}},
			[]string{"spec.containers[0].command[1]", "spec.containers[0].env[0].value"}},
		{"only a short value", map[string]interface{}{"data": map[string]interface{}{"port": short}}, nil},
		{"none", map[string]interface{}{"data": map[string]interface{}{"x": "plain"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := object("v1", "ConfigMap", tt.fields)
			before := obj.DeepCopy()
			masked, paths := s.Object(obj)
			if fmt.Sprint(paths) != fmt.Sprint(tt.wantPaths) {
				t.Errorf("paths %v, want %v", paths, tt.wantPaths)
			}
			if !equality(obj, before) {
				t.Errorf("the object given was changed: %v", obj.Object)
			}
			text, _ := json.Marshal(masked.Object)
			if strings.Contains(string(text), pw) || strings.Contains(string(text), base64.StdEncoding.EncodeToString([]byte(pw))) {
				t.Errorf("the value is still there: %s", text)
			}
			if tt.wantPaths == nil && masked != obj {
				t.Errorf("an object holding no value was copied")
			}
			if strings.Contains(fmt.Sprint(tt.fields), short) && !strings.Contains(string(text), short) {
				t.Errorf("the short value %q was masked: %s", short, text)
			}
		})
	}
}

func equality(a, b *unstructured.Unstructured) bool {
	x, _ := json.Marshal(a.Object)
	y, _ := json.Marshal(b.Object)
	return string(x) == string(y)
}

// TestSanitizerStringAsEveryForm checks String's quick pass (mayHold)
// against searching for every form in turn, as String does without it:
// values at either end of a message, values of the shortest length, and
// messages holding only the start of a value.
func TestSanitizerStringAsEveryForm(t *testing.T) {
	s := NewSanitizer(NewMasker())
	for _, v := range []string{"pw-1", "pw-12-changed", "abcd", "line-one\nline-two", `q"uo\te`, "ünïcode-välue"} {
		s.AddValue([]byte(v))
	}
	everyForm := func(msg string) string {
		forms, _ := s.build()
		for _, f := range forms {
			msg = strings.ReplaceAll(msg, f.old, f.new)
		}
		return msg
	}
	for _, msg := range []string{
		"", "pw-", "pw-1", "xpw-1", "pw-1x", "pw-2 pw-12", "abc", "abcd", "zabcdz",
		"line-one", "line-two\n", `"q\"uo\\te"`, base64.StdEncoding.EncodeToString([]byte("pw-12-changed")),
		"ünïcode-välue", "ünïcode", "nothing secret in a longer message of many words", "ab" + "cd",
	} {
		if got, want := s.String(msg), everyForm(msg); got != want {
			t.Errorf("String(%q) = %q, want %q", msg, got, want)
		}
	}
}

// BenchmarkSanitizerString is String over the messages of a release's
// changes, with the values of 1000 Secrets collected.
func BenchmarkSanitizerString(b *testing.B) {
	s := NewSanitizer(NewMasker())
	for i := range 1000 {
		s.AddValue([]byte(fmt.Sprintf("pw-%d-changed", i)))
	}
	msgs := []string{"spec.ports[0].port", "80", "8080", "metadata.labels.app.kubernetes.io/version", "changed in place by a patch the server accepts"}
	b.ReportAllocs()
	for b.Loop() {
		for _, m := range msgs {
			s.String(m)
		}
	}
}
