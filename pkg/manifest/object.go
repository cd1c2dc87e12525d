// Package manifest splits rendered Helm manifests into Kubernetes objects keyed
// by their identity, the unit every later stage works on.
package manifest

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ObjectID identifies an object the way Helm matches old and new manifests:
// group, kind, namespace and name (the version may change between charts).
type ObjectID struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String renders the ID as Kind[.group]/[namespace/]name, the form users
// type in --ack flags.
func (id ObjectID) String() string {
	kind := id.Kind
	if id.Group != "" {
		kind += "." + id.Group
	}
	if id.Namespace == "" {
		return kind + "/" + id.Name
	}
	return kind + "/" + id.Namespace + "/" + id.Name
}

// GroupKind is the ID's group and kind, as the tables of kinds key them.
func (id ObjectID) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: id.Group, Kind: id.Kind}
}

// Less orders IDs by kind, namespace and name for stable output.
func (id ObjectID) Less(o ObjectID) bool {
	if id.Kind != o.Kind {
		return id.Kind < o.Kind
	}
	if id.Group != o.Group {
		return id.Group < o.Group
	}
	if id.Namespace != o.Namespace {
		return id.Namespace < o.Namespace
	}
	return id.Name < o.Name
}

// Object is one manifest document with its identity and where it came from.
type Object struct {
	ID ObjectID
	// GVK is the full group/version/kind as written in the manifest.
	GVK schema.GroupVersionKind
	// Source is the template file named in Helm's "# Source:" comment.
	Source string
	// Obj holds the parsed object; its namespace is defaulted for namespaced kinds.
	// nil for an object of the planner's splits until Load.
	Obj *unstructured.Unstructured
	// lazy is the document Load decodes (nil: loaded).
	lazy *lazy
}

// Set is a collection of objects indexed by identity.
type Set struct {
	byID  map[ObjectID]*Object
	order []ObjectID
}

// NewSet returns an empty set.
func NewSet() *Set { return &Set{byID: map[ObjectID]*Object{}} }

// Add inserts obj; a second object with the same identity is an error, as it
// is for Helm.
func (s *Set) Add(obj *Object) error {
	if prev, ok := s.byID[obj.ID]; ok {
		return fmt.Errorf("%s is defined twice (in %s and %s)", obj.ID, prev.Source, obj.Source)
	}
	s.byID[obj.ID] = obj
	s.order = append(s.order, obj.ID)
	return nil
}

// Get returns the object with the given identity, or nil.
func (s *Set) Get(id ObjectID) *Object {
	if s == nil {
		return nil
	}
	return s.byID[id]
}

// Len returns the number of objects.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.order)
}

// Objects returns the objects in manifest order.
func (s *Set) Objects() []*Object {
	if s == nil {
		return nil
	}
	out := make([]*Object, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.byID[id])
	}
	return out
}

// UnionIDs returns the sorted identities present in any of the sets.
func UnionIDs(sets ...*Set) []ObjectID {
	seen := map[ObjectID]bool{}
	var ids []ObjectID
	for _, s := range sets {
		for _, o := range s.Objects() {
			if !seen[o.ID] {
				seen[o.ID] = true
				ids = append(ids, o.ID)
			}
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].Less(ids[j]) })
	return ids
}
