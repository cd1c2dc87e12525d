package gitops

import (
	"fmt"
	"sort"
)

// Change is a HelmRelease or an Application whose render differs between
// the base and the head: Base is nil when the head adds it, Head when it
// removes it. File and Line are where a reviewer sees the change: the
// first changed line of the object in the head, or of a ConfigMap or
// Secret its values come from.
type Change struct {
	Ref        ObjectRef
	Base, Head *Release
	File       string
	Line       int
}

// Changes pairs the HelmReleases and Applications of base and head by
// identity (kind, namespace, name), resolves each side, and returns those
// that render differently, sorted by identity. Unchanged objects, and
// Applications whose source is no Helm chart, are left out. An object
// named twice on one side, or one that does not resolve, is an error
// naming it, its file and the field.
func Changes(base, head *Side) ([]Change, error) {
	bases, err := releases(base)
	if err != nil {
		return nil, err
	}
	heads, err := releases(head)
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for k := range bases {
		keys[k] = true
	}
	for k := range heads {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var out []Change
	for _, k := range sorted {
		bd, hd := bases[k], heads[k]
		c := Change{}
		if bd != nil {
			if c.Base, err = base.Resolve(bd); err != nil {
				return nil, err
			}
			c.Ref, c.File, c.Line = bd.Ref, bd.File, bd.Line
		}
		if hd != nil {
			if c.Head, err = head.Resolve(hd); err != nil {
				return nil, err
			}
			c.Ref, c.File, c.Line = hd.Ref, hd.File, hd.Line
		}
		switch {
		case c.Base == nil && c.Head == nil:
			continue // no Helm source on either side
		case c.Base != nil && c.Head != nil && Same(c.Base, c.Head):
			continue
		case bd != nil && hd != nil:
			c.File, c.Line = where(base, bd, hd, c.Head)
		}
		out = append(out, c)
	}
	return out, nil
}

// releases are the HelmReleases and Applications of s by identity.
func releases(s *Side) (map[string]*Doc, error) {
	out := map[string]*Doc{}
	for _, d := range s.Docs {
		if !IsRelease(d) {
			continue
		}
		if prev, ok := out[d.Ref.key()]; ok {
			return nil, fmt.Errorf("%s is in %s:%d and in %s:%d", d.Ref, prev.File, prev.Line, d.File, d.Line)
		}
		out[d.Ref.key()] = d
	}
	return out, nil
}

// where is the first changed line of hd against bd, else of the first
// values source of r that changed against the base's object of the same
// identity, else hd's first line.
func where(base *Side, bd, hd *Doc, r *Release) (string, int) {
	if l := firstChange(bd.Node, hd.Node); l != 0 {
		return hd.File, l
	}
	for _, src := range r.Sources {
		was := base.find(src.Ref.Kind, src.Ref.Namespace, src.Ref.Name)
		if was == nil {
			return src.File, src.Line
		}
		if l := firstChange(was.Node, src.Node); l != 0 {
			return src.File, l
		}
	}
	return hd.File, hd.Line
}
