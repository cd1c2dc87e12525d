package jsonvalue

import (
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
)

// TestVariants pins each variant's rules, the cases where they differ
// among them: what classify (LeafEqual, Subset), planner (SemanticEqual),
// report (Equal) and predict (DecodedEqual) each compared by its own walk
// before. Equal and SemanticEqual answer as their reflective references,
// DecodedEqual as a JSON round trip of JSON values.
func TestVariants(t *testing.T) {
	type m = map[string]interface{}
	type l = []interface{}
	shared := m{"a": l{"x", int64(1)}}
	const (
		// oracle: the case holds JSON values only (DecodedEqual's reference
		// is their round trip through encoding/json).
		oracle = true
		other  = false
	)
	cases := []struct {
		name                                 string
		a, b                                 interface{}
		json                                 bool
		equal, semantic, decoded, leaf, subs bool
	}{
		{"equal maps", m{"a": "x", "n": int64(1)}, m{"a": "x", "n": int64(1)}, oracle, true, true, true, true, true},
		{"shared map", shared, shared, oracle, true, true, true, true, true},
		{"value differs", m{"a": "x"}, m{"a": "y"}, oracle, false, false, false, false, false},
		{"int64 and float64", int64(1), float64(1), oracle, false, false, true, true, true},
		{"int64 and float64 below", m{"n": int64(1)}, m{"n": float64(1)}, oracle, false, false, true, false, true},
		{"int and int64", 1, int64(1), oracle, false, false, true, true, true},
		{"int32 and float64", int32(1), float64(1), oracle, false, false, true, false, false},
		{"numbers differ", int64(1), float64(1.5), oracle, false, false, false, false, false},
		{"key differs", m{"a": "x"}, m{"b": "x"}, oracle, false, false, false, false, false},
		{"nil and empty map", m{"a": m(nil)}, m{"a": m{}}, oracle, false, true, false, false, true},
		{"nil and empty slice", m{"a": l(nil)}, m{"a": l{}}, oracle, false, true, false, false, true},
		{"null and empty map", m{"a": nil}, m{"a": m{}}, oracle, false, false, false, false, false},
		{"null and nil map", m{"a": nil}, m{"a": m(nil)}, oracle, false, false, true, false, false},
		{"null and nil slice", nil, l(nil), oracle, false, false, true, false, false},
		{"fewer keys", m{"a": "x"}, m{"a": "x", "b": "y"}, oracle, false, false, false, false, true},
		{"fewer keys below a list", l{m{"a": "x"}}, l{m{"a": "x", "b": "y"}}, oracle, false, false, false, false, true},
		{"slices equal", l{m{"a": true}, "s"}, l{m{"a": true}, "s"}, oracle, true, true, true, true, true},
		{"slices reordered", l{"a", "b"}, l{"b", "a"}, oracle, false, false, false, false, false},
		{"slice longer", l{"a"}, l{"a", "b"}, oracle, false, false, false, false, false},
		{"string and map", m{"a": "x"}, m{"a": m{"x": "y"}}, oracle, false, false, false, false, false},
		{"bools", m{"a": true}, m{"a": false}, oracle, false, false, false, false, false},
		{"other types", m{"a": []string{"x"}}, m{"a": []string{"x"}}, other, true, true, false, true, true},
		{"other types, nil and empty", []string(nil), []string{}, other, false, true, false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			variants := []struct {
				name      string
				f         func(a, b interface{}) bool
				want      bool
				symmetric bool
			}{
				{"Equal", Equal, c.equal, true},
				{"SemanticEqual", SemanticEqual, c.semantic, true},
				{"DecodedEqual", DecodedEqual, c.decoded, true},
				{"LeafEqual", LeafEqual, c.leaf, true},
				{"Subset", Subset, c.subs, false},
			}
			for _, v := range variants {
				if got := v.f(c.a, c.b); got != v.want {
					t.Errorf("%s = %v, want %v", v.name, got, v.want)
				}
				if got := v.f(c.b, c.a); v.symmetric && got != v.want {
					t.Errorf("reversed: %s = %v, want %v", v.name, got, v.want)
				}
			}
			if want := reflect.DeepEqual(c.a, c.b); c.equal != want {
				t.Errorf("the case says Equal %v, reflect.DeepEqual says %v", c.equal, want)
			}
			if want := equality.Semantic.DeepEqual(c.a, c.b); c.semantic != want {
				t.Errorf("the case says SemanticEqual %v, equality.Semantic.DeepEqual says %v", c.semantic, want)
			}
			if want := roundTrip(t, c.a, c.b); c.json && c.decoded != want {
				t.Errorf("the case says DecodedEqual %v, a JSON round trip says %v", c.decoded, want)
			}
		})
	}
}

// roundTrip reports whether a and b decode equal from their JSON.
func roundTrip(t *testing.T, a, b interface{}) bool {
	t.Helper()
	decode := func(v interface{}) interface{} {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var out interface{}
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	return reflect.DeepEqual(decode(a), decode(b))
}

// TestNumber: the forms of a number unstructured content holds.
func TestNumber(t *testing.T) {
	for _, c := range []struct {
		v    interface{}
		want float64
		ok   bool
	}{{int64(2), 2, true}, {float64(2.5), 2.5, true}, {3, 3, true}, {int32(1), 0, false}, {"1", 0, false}, {nil, 0, false}} {
		if got, ok := Number(c.v); got != c.want || ok != c.ok {
			t.Errorf("Number(%#v) = %v, %v; want %v, %v", c.v, got, ok, c.want, c.ok)
		}
	}
}
