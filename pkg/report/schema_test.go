package report

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestJSONSchemaDocumented checks docs/json-schema.md against the JSON
// output types, the contract's only definition: every field they can write is
// described in the outline and in the reference tables, and the outline names
// no field they lack. A field added, renamed or dropped without the document
// fails here.
func TestJSONSchemaDocumented(t *testing.T) {
	data, err := os.ReadFile("../../docs/json-schema.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	outline := between(t, doc, "In short", "Formatting:")
	fields := map[string]bool{}
	jsonFields(reflect.TypeOf(jsonPlan{}), fields)
	for name := range fields {
		if !regexp.MustCompile(`\b` + name + `\b`).MatchString(outline) {
			t.Errorf("field %q is missing from the outline of docs/json-schema.md", name)
		}
		if !regexp.MustCompile("`[^`\n]*\\b" + name + "\\b[^`\n]*`").MatchString(between(t, doc, "## Top level", "\x00")) {
			t.Errorf("field %q is not described in the reference tables of docs/json-schema.md", name)
		}
	}
	block := between(t, outline, "```", "```")
	for _, name := range regexp.MustCompile(`([a-zA-Z]+)\??:|[{,]\s*([a-zA-Z]+)\??\s*[,}]`).FindAllStringSubmatch(block, -1) {
		n := name[1] + name[2]
		if !fields[n] {
			t.Errorf("the outline of docs/json-schema.md names %q, which the JSON output does not have", n)
		}
	}
}

// jsonFields adds the JSON names of t's fields, and of its nested structs.
func jsonFields(t reflect.Type, into map[string]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" && f.Anonymous {
			jsonFields(f.Type, into) // an embedded struct's fields are the document's, as encoding/json writes them
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		into[name] = true
		jsonFields(f.Type, into)
	}
}

func between(t *testing.T, s, from, to string) string {
	t.Helper()
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		t.Fatalf("docs/json-schema.md has no %q", from)
	}
	part, _, ok := strings.Cut(rest, to)
	if !ok && to != "\x00" {
		t.Fatalf("docs/json-schema.md has no %q after %q", to, from)
	}
	return part
}
