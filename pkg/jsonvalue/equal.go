// Package jsonvalue is the one equality of JSON values as unstructured
// content holds them (maps, slices, strings, int64/float64 numbers,
// booleans, nil). Its variants differ only where their callers must
// answer as an outside reference does (reflect.DeepEqual,
// equality.Semantic.DeepEqual, a JSON merge patch, a decoded field); each
// says which and why. The walks avoid reflection for the types unstructured
// content holds: the reflective walk was most of what comparing objects
// cost. It imports nothing of the module, so every stage may use it.
package jsonvalue

import (
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
)

// rules are a variant's: how nil and empty maps and slices, numbers of
// different Go types and other types compare.
type rules uint8

const (
	// exact answers as reflect.DeepEqual: a nil map or slice differs from
	// an empty one, numbers of different types differ.
	exact rules = iota
	// semantic answers as equality.Semantic.DeepEqual: a nil map or slice
	// equals an empty one, numbers of different types differ.
	semantic
	// decoded answers as values decoded from JSON compare: a nil map or
	// slice is null, every number a float64, other types unequal.
	decoded
)

// Equal reports whether a and b are equal as reflect.DeepEqual says: the
// report's diff shows a nil map and an empty one apart, as their YAML
// differs ({} and null).
func Equal(a, b interface{}) bool { return equal(a, b, exact) }

// SemanticEqual reports whether a and b are equal as
// equality.Semantic.DeepEqual says, which apimachinery's comparisons of
// objects use: a nil map or slice equals an empty one (a typed object's
// omitempty field drops both), so the planner finds no configuration
// change where only that differs.
func SemanticEqual(a, b interface{}) bool { return equal(a, b, semantic) }

// DecodedEqual reports whether a and b decode from their JSON encodings
// into the same value (jsonpatch's matchesValue): numbers as float64, a nil
// map or slice as null, other types unequal. predict's merge patch is the
// one jsonpatch.CreateMergePatch computes from the encodings, so it
// compares so.
func DecodedEqual(a, b interface{}) bool { return equal(a, b, decoded) }

// LeafEqual is Equal, but a number equals the same number in another form
// (int64, float64, int) at the top: unstructured decoding yields either
// form for the same number, and classify's changed paths and drift, which
// compare field values one by one, must not show that as a change. Below
// the top, values compare as Equal.
func LeafEqual(a, b interface{}) bool {
	if af, ok := Number(a); ok {
		bf, ok := Number(b)
		return ok && af == bf
	}
	return Equal(a, b)
}

// Subset reports whether a is b or, for maps, has a subset of b's keys
// each with a value that is a subset of b's; lists compare element by
// element, leaves as LeafEqual. A release's manifest is a subset of the
// live object that holds every field it set as it set it.
func Subset(a, b interface{}) bool {
	switch at := a.(type) {
	case map[string]interface{}:
		bt, ok := b.(map[string]interface{})
		if !ok {
			return false
		}
		for k, v := range at {
			bv, ok := bt[k]
			if !ok || !Subset(v, bv) {
				return false
			}
		}
		return true
	case []interface{}:
		bt, ok := b.([]interface{})
		if !ok || len(at) != len(bt) {
			return false
		}
		for i := range at {
			if !Subset(at[i], bt[i]) {
				return false
			}
		}
		return true
	}
	return LeafEqual(a, b)
}

func equal(a, b interface{}, r rules) bool {
	if r == decoded {
		a, b = null(a), null(b)
		if af, ok := decodedNumber(a); ok {
			bf, ok := decodedNumber(b)
			return ok && af == bf
		}
	}
	switch av := a.(type) {
	case map[string]interface{}:
		bv, ok := b.(map[string]interface{})
		if !ok || len(av) != len(bv) || r == exact && (av == nil) != (bv == nil) {
			return false
		}
		// The same map is equal to itself, as equality.Semantic's walk
		// says; content the previous and next manifests share is compared
		// by reference.
		if r == semantic && (len(av) == 0 || reflect.ValueOf(av).UnsafePointer() == reflect.ValueOf(bv).UnsafePointer()) {
			return true
		}
		for k, x := range av {
			y, ok := bv[k]
			if !ok || !equal(x, y, r) {
				return false
			}
		}
		return true
	case []interface{}:
		bv, ok := b.([]interface{})
		if !ok || len(av) != len(bv) || r == exact && (av == nil) != (bv == nil) {
			return false
		}
		for i := range av {
			if !equal(av[i], bv[i], r) {
				return false
			}
		}
		return true
	case string, bool, int64, float64, nil:
		return a == b // the same type and value
	}
	switch r {
	case exact:
		return reflect.DeepEqual(a, b)
	case semantic:
		return equality.Semantic.DeepEqual(a, b)
	}
	return false
}

// null is v as JSON decodes its encoding: a nil map or slice is null.
func null(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		if t == nil {
			return nil
		}
	case []interface{}:
		if t == nil {
			return nil
		}
	}
	return v
}

// Number is n as a float64 when it is a number in a form unstructured
// decoding yields (int64, float64, or an int set by code).
func Number(n interface{}) (float64, bool) {
	switch v := n.(type) {
	case int64:
		return float64(v), true
	case float64:
		return v, true
	case int:
		return float64(v), true
	}
	return 0, false
}

// decodedNumber is Number, and an int32 too: what JSON decodes any number
// into is a float64, whatever Go type held it before encoding.
func decodedNumber(n interface{}) (float64, bool) {
	if v, ok := n.(int32); ok {
		return float64(v), true
	}
	return Number(n)
}
