package classify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// validationFindings compares the value validations of one schema node
// (the keywords other than type, properties, items and required, which
// schemaFindings walks): each difference is a finding at path.KEYWORD,
// destructive when the new schema may refuse a value the old one accepted
// (a tighter bound, a narrower enum, a new or changed pattern, format or
// CEL rule) — existing resources holding such a value are refused on their
// next update —, not destructive when it only accepts more.
func validationFindings(path, shown string, live, next *apiextv1.JSONSchemaProps) []CRDFinding {
	var out []CRDFinding
	add := func(key string, narrows bool, before, after, what string) {
		msg := fmt.Sprintf("field %s: %s %s → %s, wider: existing resources stay valid", shown, what, before, after)
		if narrows {
			msg = fmt.Sprintf("field %s: %s %s → %s, stricter: existing resources whose value it refuses are refused on their next update", shown, what, before, after)
		}
		out = append(out, CRDFinding{Path: path + "." + key, Destructive: narrows, Before: before, After: after, Message: msg})
	}
	for _, b := range []struct {
		key        string
		lower      bool
		live, next *float64
	}{
		{"minimum", true, live.Minimum, next.Minimum},
		{"maximum", false, live.Maximum, next.Maximum},
		{"minLength", true, intBound(live.MinLength), intBound(next.MinLength)},
		{"maxLength", false, intBound(live.MaxLength), intBound(next.MaxLength)},
		{"minItems", true, intBound(live.MinItems), intBound(next.MinItems)},
		{"maxItems", false, intBound(live.MaxItems), intBound(next.MaxItems)},
		{"minProperties", true, intBound(live.MinProperties), intBound(next.MinProperties)},
		{"maxProperties", false, intBound(live.MaxProperties), intBound(next.MaxProperties)},
	} {
		if sameBound(b.live, b.next) {
			continue
		}
		// A new bound, or one moved inwards, refuses values the old one took.
		narrows := b.live == nil || b.next != nil && (b.lower && *b.next > *b.live || !b.lower && *b.next < *b.live)
		add(b.key, narrows, showBound(b.live), showBound(b.next), b.key)
	}
	for _, f := range []struct {
		key        string
		live, next bool
		// stricter is the value that refuses more.
		stricter bool
	}{
		{"exclusiveMinimum", live.ExclusiveMinimum, next.ExclusiveMinimum, true},
		{"exclusiveMaximum", live.ExclusiveMaximum, next.ExclusiveMaximum, true},
		{"uniqueItems", live.UniqueItems, next.UniqueItems, true},
		{"nullable", live.Nullable, next.Nullable, false},
	} {
		if f.live != f.next {
			add(f.key, f.next == f.stricter, fmt.Sprint(f.live), fmt.Sprint(f.next), f.key)
		}
	}
	// Whether one regular expression, format or divisor accepts all the
	// other did cannot be told: any new or changed one may narrow.
	for _, s := range []struct{ key, live, next string }{
		{"pattern", live.Pattern, next.Pattern},
		{"format", live.Format, next.Format},
		{"multipleOf", showBound(live.MultipleOf), showBound(next.MultipleOf)},
	} {
		if s.live != s.next {
			add(s.key, s.next != "" && s.next != unset, orUnset(s.live), orUnset(s.next), s.key)
		}
	}
	out = append(out, enumFindings(path, shown, live.Enum, next.Enum)...)
	out = append(out, ruleFindings(path, shown, live.XValidations, next.XValidations)...)
	for _, name := range live.Required {
		if !slices.Contains(next.Required, name) {
			out = append(out, CRDFinding{Path: path + ".required", Before: name,
				Message: fmt.Sprintf("field %s no longer required, wider: existing resources stay valid", joinKey(fieldOf(shown), name))})
		}
	}
	if live.Type != next.Type && !narrowed(live.Type, next.Type) {
		out = append(out, CRDFinding{Path: path + ".type", Before: live.Type, After: next.Type,
			Message: fmt.Sprintf("field %s: type %s → %s, wider: existing values stay valid", shown, orAny(live.Type), orAny(next.Type))})
	}
	return append(out, otherKeywords(path, shown, live, next)...)
}

const unset = "<unset>"

func orUnset(s string) string {
	if s == "" {
		return unset
	}
	return s
}

// fieldOf turns shown back into a field prefix for joinKey.
func fieldOf(shown string) string {
	if shown == rootShown {
		return ""
	}
	return shown
}

func intBound(v *int64) *float64 {
	if v == nil {
		return nil
	}
	f := float64(*v)
	return &f
}

func sameBound(a, b *float64) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

func showBound(v *float64) string {
	if v == nil {
		return unset
	}
	return fmt.Sprint(*v)
}

// enumFindings compares two enums: a value dropped, or an enum where there
// was none, narrows; values only added, or the enum dropped, widen.
func enumFindings(path, shown string, live, next []apiextv1.JSON) []CRDFinding {
	lv, nv := enumValues(live), enumValues(next)
	if slices.Equal(lv, nv) {
		return nil
	}
	f := CRDFinding{Path: path + ".enum", Before: showEnum(lv), After: showEnum(nv)}
	var dropped, added []string
	for _, v := range lv {
		if !slices.Contains(nv, v) {
			dropped = append(dropped, v)
		}
	}
	for _, v := range nv {
		if !slices.Contains(lv, v) {
			added = append(added, v)
		}
	}
	switch {
	case len(nv) == 0:
		f.Message = fmt.Sprintf("field %s: enum %s removed, wider: any value of its type is accepted", shown, f.Before)
	case len(lv) == 0:
		f.Destructive = true
		f.Message = fmt.Sprintf("field %s: restricted to enum %s, stricter: existing resources holding another value are refused on their next update", shown, f.After)
	case len(dropped) > 0:
		f.Destructive = true
		f.Message = fmt.Sprintf("field %s: enum %s → %s drops %s, stricter: existing resources holding them are refused on their next update", shown, f.Before, f.After, strings.Join(dropped, ", "))
	case len(added) > 0:
		f.Message = fmt.Sprintf("field %s: enum %s → %s adds %s, wider: existing resources stay valid", shown, f.Before, f.After, strings.Join(added, ", "))
	default: // the same values in another order
		f.Message = fmt.Sprintf("field %s: enum %s → %s reordered", shown, f.Before, f.After)
	}
	return []CRDFinding{f}
}

func enumValues(vs []apiextv1.JSON) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, compactJSON(v.Raw))
	}
	return out
}

func showEnum(vs []string) string {
	if len(vs) == 0 {
		return unset
	}
	return "[" + strings.Join(vs, ", ") + "]"
}

func compactJSON(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// ruleFindings compares x-kubernetes-validations by rule: a rule added may
// refuse existing resources, one removed refuses nothing more, and one
// kept with another message (or reason, field path) changes only what a
// refusal says.
func ruleFindings(path, shown string, live, next apiextv1.ValidationRules) []CRDFinding {
	path += ".x-kubernetes-validations"
	find := func(rs apiextv1.ValidationRules, rule string) *apiextv1.ValidationRule {
		for i := range rs {
			if rs[i].Rule == rule {
				return &rs[i]
			}
		}
		return nil
	}
	var out []CRDFinding
	for _, r := range next {
		switch old := find(live, r.Rule); {
		case old == nil:
			out = append(out, CRDFinding{Path: path, Destructive: true, After: r.Rule,
				Message: fmt.Sprintf("field %s: validation rule %q added, stricter: existing resources it refuses are refused on their next update", shown, r.Rule)})
		case !ruleEqual(*old, r):
			out = append(out, CRDFinding{Path: path, Before: r.Rule, After: r.Rule,
				Message: fmt.Sprintf("field %s: validation rule %q keeps its rule; its message, reason or field path changes", shown, r.Rule)})
		}
	}
	for _, r := range live {
		if find(next, r.Rule) == nil {
			out = append(out, CRDFinding{Path: path, Before: r.Rule,
				Message: fmt.Sprintf("field %s: validation rule %q removed, wider: existing resources stay valid", shown, r.Rule)})
		}
	}
	return out
}

func ruleEqual(a, b apiextv1.ValidationRule) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// handledKeywords are the schema keywords schemaFindings and
// validationFindings compare themselves.
var handledKeywords = []string{"type", "properties", "required", "x-kubernetes-preserve-unknown-fields",
	"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems",
	"minProperties", "maxProperties", "uniqueItems", "nullable", "pattern", "format", "multipleOf", "enum", "x-kubernetes-validations"}

// narrowingKeywords may refuse values when added or changed: combinators
// and list semantics (a list that becomes a set refuses duplicates).
var narrowingKeywords = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true, "not": true,
	"x-kubernetes-list-type": true, "x-kubernetes-list-map-keys": true, "x-kubernetes-int-or-string": true,
	"x-kubernetes-embedded-resource": true, "additionalProperties": true, "items": true, "patternProperties": true}

// descriptionKeyword marks the findings of changed descriptions, which CRD
// collapses into one per CRD: a newer operator rewords many of them.
const descriptionKeyword = "description"

// otherKeywords reports every other keyword of the node that differs
// (default, description, list types, combinators, an items or
// additionalProperties schema added or removed), with its old and new
// JSON value.
func otherKeywords(path, shown string, live, next *apiextv1.JSONSchemaProps) []CRDFinding {
	lm, nm := keywordMap(live), keywordMap(next)
	if live.Items != nil && next.Items != nil && live.Items.Schema != nil && next.Items.Schema != nil {
		delete(lm, "items")
		delete(nm, "items") // walked by schemaFindings
	}
	if live.AdditionalProperties != nil && next.AdditionalProperties != nil && live.AdditionalProperties.Schema != nil && next.AdditionalProperties.Schema != nil {
		delete(lm, "additionalProperties")
		delete(nm, "additionalProperties")
	}
	keys := map[string]bool{}
	for k := range lm {
		keys[k] = true
	}
	for k := range nm {
		keys[k] = true
	}
	var out []CRDFinding
	for _, k := range sortedSet(keys) {
		before, after := showJSON(lm[k]), showJSON(nm[k])
		if before == after {
			continue
		}
		narrows := narrowingKeywords[k] && after != unset
		how := "not a validation: existing resources stay valid"
		if narrows {
			how = "may be stricter: existing resources it refuses are refused on their next update"
		} else if narrowingKeywords[k] {
			how = "wider: existing resources stay valid"
		}
		out = append(out, CRDFinding{Path: path + "." + k, Destructive: narrows, Before: before, After: after,
			Message: fmt.Sprintf("field %s: %s %s → %s, %s", shown, k, before, after, how)})
	}
	return out
}

func keywordMap(s *apiextv1.JSONSchemaProps) map[string]json.RawMessage {
	data, err := json.Marshal(s)
	var m map[string]json.RawMessage
	if err != nil || json.Unmarshal(data, &m) != nil {
		return nil
	}
	for _, k := range handledKeywords {
		delete(m, k)
	}
	return m
}

// showJSON renders a keyword's value, shortened: a schema can be long.
func showJSON(raw json.RawMessage) string {
	if raw == nil {
		return unset
	}
	s := compactJSON(raw)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// specFindings reports the differences of the two CRDs outside what CRD
// compares itself (versions' schemas, served and storage flags, scope):
// names, conversion, printer columns, subresources, deprecation,
// selectable fields. The server's defaults are applied to both first, so a
// CRD the server defaulted (conversion strategy None, names.listKind)
// equals the file it was created from. None is destructive.
func specFindings(live, next *apiextv1.CustomResourceDefinition) []CRDFinding {
	live, next = live.DeepCopy(), next.DeepCopy()
	apiextv1.SetObjectDefaults_CustomResourceDefinition(live)
	apiextv1.SetObjectDefaults_CustomResourceDefinition(next)
	var out []CRDFinding
	add := func(prefix string, a, b interface{}) {
		am, aerr := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
		bm, berr := runtime.DefaultUnstructuredConverter.ToUnstructured(b)
		if aerr != nil || berr != nil {
			return
		}
		for _, p := range ChangedPaths(am, bm) {
			before, after := render(Lookup(am, p)), render(Lookup(bm, p))
			out = append(out, CRDFinding{Path: prefix + "." + p, Before: before, After: after,
				Message: fmt.Sprintf("%s.%s differs from the cluster's (%s → %s); existing resources stay valid", prefix, p, shorten(before), shorten(after))})
		}
	}
	ls, ns := live.Spec, next.Spec
	ls.Versions, ns.Versions, ns.Scope = nil, nil, ls.Scope // scope: see CRD
	add("spec", &ls, &ns)
	for _, lv := range live.Spec.Versions {
		nv := findVersion(next, lv.Name)
		if nv == nil {
			continue
		}
		a, b := lv, *nv
		a.Schema, b.Schema = nil, nil
		a.Served, a.Storage = b.Served, b.Storage // compared by CRD
		add("spec.versions["+lv.Name+"]", &a, &b)
	}
	return out
}

func shorten(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
