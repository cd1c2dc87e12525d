package classify

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/jsonvalue"
)

// identifier matches map keys printed as ".key"; others print as "[key]",
// the way Kubernetes field paths print label and annotation keys.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func joinKey(prefix, key string) string {
	if identifier.MatchString(key) {
		if prefix == "" {
			return key
		}
		return prefix + "." + key
	}
	return fmt.Sprintf("%s[%s]", prefix, key)
}

// ChangedPaths returns the sorted leaf paths where a and b differ, in
// Kubernetes field-path notation (spec.template.spec.containers[0].image).
// Lists of different lengths are reported at the list itself.
func ChangedPaths(a, b map[string]interface{}) []string {
	var out []string
	diffValue("", a, b, &out)
	sort.Strings(out)
	return out
}

func diffValue(path string, a, b interface{}, out *[]string) {
	am, aok := a.(map[string]interface{})
	bm, bok := b.(map[string]interface{})
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for k := range keys {
			diffValue(joinKey(path, k), am[k], bm[k], out)
		}
		return
	}
	al, alok := a.([]interface{})
	bl, blok := b.([]interface{})
	if alok && blok && len(al) == len(bl) {
		for i := range al {
			diffValue(fmt.Sprintf("%s[%d]", path, i), al[i], bl[i], out)
		}
		return
	}
	if !jsonvalue.LeafEqual(a, b) {
		*out = append(*out, path)
	}
}

// Under reports whether path is prefix itself or lies below it.
func Under(path, prefix string) bool {
	if prefix == "" || path == prefix {
		return true
	}
	return strings.HasPrefix(path, prefix+".") || strings.HasPrefix(path, prefix+"[")
}

// Lookup returns the value at a path produced by ChangedPaths, or nil.
func Lookup(obj map[string]interface{}, path string) interface{} {
	var cur interface{} = obj
	for _, seg := range splitPath(path) {
		switch c := cur.(type) {
		case map[string]interface{}:
			cur = c[seg]
		case []interface{}:
			var i int
			if _, err := fmt.Sscanf(seg, "%d", &i); err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

// setPath sets value at a path produced by ChangedPaths, creating maps on the
// way; it does nothing where a list index is out of range.
func setPath(obj map[string]interface{}, path string, value interface{}) {
	segs := splitPath(path)
	var cur interface{} = obj
	for i, seg := range segs {
		last := i == len(segs)-1
		switch c := cur.(type) {
		case map[string]interface{}:
			if last {
				c[seg] = value
				return
			}
			next, ok := c[seg]
			if !ok || next == nil {
				next = map[string]interface{}{}
				c[seg] = next
			}
			cur = next
		case []interface{}:
			var idx int
			if _, err := fmt.Sscanf(seg, "%d", &idx); err != nil || idx < 0 || idx >= len(c) {
				return
			}
			if last {
				c[idx] = value
				return
			}
			cur = c[idx]
		default:
			return
		}
	}
}

// splitPath undoes joinKey: "a.b[c.d][0]" → [a b c.d 0].
func splitPath(path string) []string {
	var segs []string
	for len(path) > 0 {
		switch path[0] {
		case '.':
			path = path[1:]
		case '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return append(segs, path[1:])
			}
			segs = append(segs, path[1:end])
			path = path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				return append(segs, path)
			}
			segs = append(segs, path[:end])
			path = path[end:]
		}
	}
	return segs
}

// serverManaged are fields the API server owns; they are never part of a
// change users make.
var serverManaged = [][]string{
	{"metadata", "managedFields"},
	{"metadata", "resourceVersion"},
	{"metadata", "generation"},
	{"metadata", "uid"},
	{"metadata", "creationTimestamp"},
	{"metadata", "selfLink"},
	{"status"},
}

// Normalize returns a copy of obj without server-managed fields, the form
// changes are compared and shown in. nil stays nil.
func Normalize(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	// Pruned before the copy: managedFields and status are often most of a
	// live object.
	return (&unstructured.Unstructured{Object: pruned(obj.Object, serverManaged)}).DeepCopy()
}

// pruned returns m without the fields at paths; only the maps on the way to
// them are copied, the rest is shared with m.
func pruned(m map[string]interface{}, paths [][]string) map[string]interface{} {
	out := make(map[string]interface{}, len(m))
	for k, v := range m {
		out[k] = v
	}
	below := map[string][][]string{}
	for _, p := range paths {
		if len(p) == 1 {
			delete(out, p[0])
		} else {
			below[p[0]] = append(below[p[0]], p[1:])
		}
	}
	for k, ps := range below {
		if child, ok := out[k].(map[string]interface{}); ok {
			out[k] = pruned(child, ps)
		}
	}
	return out
}

// ValueAt renders obj's value at path as reasons hold it ("" when absent).
func ValueAt(obj *unstructured.Unstructured, path string) string {
	if obj == nil {
		return ""
	}
	return render(Lookup(obj.Object, path))
}
