package classify

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Ownership is who owns which field of a live object, read from its
// metadata.managedFields (server-side apply's field management), with the
// paths in this package's notation (spec.containers[0].image).
type Ownership struct {
	owners map[string][]string // path → managers
	paths  map[string]string   // server notation (.spec.containers[name="a"].image) → path
}

// Owners reads obj's managed fields, leaving out the entries of manager
// self (Helm's own, whatever the operation).
func Owners(obj *unstructured.Unstructured, self string) *Ownership {
	o := &Ownership{owners: map[string][]string{}, paths: map[string]string{}}
	if obj == nil {
		return o
	}
	for _, e := range obj.GetManagedFields() {
		if e.Manager == self || e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
			continue
		}
		set.Leaves().Iterate(func(p fieldpath.Path) {
			path, ok := localPath(obj.Object, p)
			if !ok {
				return
			}
			o.paths[p.String()] = path
			for _, m := range o.owners[path] {
				if m == e.Manager {
					return
				}
			}
			o.owners[path] = append(o.owners[path], e.Manager)
		})
	}
	return o
}

// Owner returns the managers (other than self) that own path or the field
// holding it, joined by ", "; "" when none.
func (o *Ownership) Owner(path string) string {
	var found []string
	for p, ms := range o.owners {
		if Under(path, p) {
			found = append(found, ms...)
		}
	}
	sort.Strings(found)
	return strings.Join(found, ", ")
}

// Paths returns every path a manager other than self owns, sorted.
func (o *Ownership) Paths() []string {
	out := make([]string, 0, len(o.owners))
	for p := range o.owners {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Path returns a server-notation field path (as in a conflict's cause) in
// this package's notation: as read from the managed fields when they hold
// it, otherwise the server's without its leading dot.
func (o *Ownership) Path(server string) string {
	if p, ok := o.paths[server]; ok {
		return p
	}
	return strings.TrimPrefix(server, ".")
}

// localPath turns a managed-fields path into this package's notation by
// walking obj: keyed and set list elements become the index they have in
// obj. ok is false when obj lacks the element.
func localPath(obj map[string]interface{}, p fieldpath.Path) (string, bool) {
	var cur interface{} = obj
	out := ""
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			m, ok := cur.(map[string]interface{})
			if !ok {
				return "", false
			}
			out = joinKey(out, *pe.FieldName)
			cur = m[*pe.FieldName]
		case pe.Index != nil:
			l, ok := cur.([]interface{})
			if !ok || *pe.Index >= len(l) {
				return "", false
			}
			out = fmt.Sprintf("%s[%d]", out, *pe.Index)
			cur = l[*pe.Index]
		case pe.Key != nil || pe.Value != nil:
			l, ok := cur.([]interface{})
			if !ok {
				return "", false
			}
			i := matchElement(l, pe)
			if i < 0 {
				return "", false
			}
			out = fmt.Sprintf("%s[%d]", out, i)
			cur = l[i]
		default:
			return "", false
		}
	}
	return out, true
}

// matchElement returns the index of the list element pe selects, or -1.
func matchElement(l []interface{}, pe fieldpath.PathElement) int {
	for i, item := range l {
		if pe.Value != nil {
			if fmt.Sprint((*pe.Value).Unstructured()) == fmt.Sprint(item) {
				return i
			}
			continue
		}
		m, ok := item.(map[string]interface{})
		if !ok {
			continue
		}
		match := true
		for _, f := range *pe.Key {
			if fmt.Sprint(f.Value.Unstructured()) != fmt.Sprint(m[f.Name]) {
				match = false
				break
			}
		}
		if match {
			return i
		}
	}
	return -1
}
