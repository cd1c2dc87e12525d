package manifest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/panics"
)

// Scoper tells whether a kind is namespaced. known is false when the cluster
// (or catalogue) has no mapping for the kind, e.g. a custom resource whose
// CRD is created by the same release.
type Scoper interface {
	IsNamespaced(gvk schema.GroupVersionKind) (namespaced, known bool, err error)
}

// ScoperFunc adapts a function to Scoper.
type ScoperFunc func(gvk schema.GroupVersionKind) (bool, bool, error)

// IsNamespaced calls f.
func (f ScoperFunc) IsNamespaced(gvk schema.GroupVersionKind) (bool, bool, error) { return f(gvk) }

const sourcePrefix = "# Source: "

// Split parses a Helm manifest stream ("---"-separated documents with
// "# Source:" comments) into a Set. Namespaced objects without a namespace
// get defaultNamespace, as Helm's kube client does; cluster-scoped objects
// keep an empty namespace whatever the manifest says. name labels errors
// (a file name or "release manifest").
func Split(name, manifest, defaultNamespace string, scoper Scoper) (*Set, error) {
	return split(name, manifest, defaultNamespace, scoper, nil, nil)
}

// Parsed remembers the documents one Split parsed (SplitRemembering), by
// their text, for a later Split of another manifest (SplitSharing): a
// document of the same text is not parsed again, and its object shares the
// parsed content of the first, metadata included. A release's last
// manifest and its new render are mostly the same documents: this halves
// the parsing and the memory of the objects the upgrade leaves as they are.
//
// Shared content is never changed in place: what changes an object's
// metadata replaces the metadata map (SetHelmOwnership, the namespace Split
// sets), and nothing changes its other fields (copy an object before
// changing anything else in it).
type Parsed struct {
	byText map[[sha256.Size]byte]remembered
}

// remembered is one parsed document: its content as the first Split left
// it (the namespace set), or, split lazily, its head and encoded form; and
// the namespace the document itself gave.
type remembered struct {
	content   map[string]interface{}
	encoded   *encoded
	namespace string
}

// SplitRemembering is Split, remembering the documents it parsed.
func SplitRemembering(name, manifest, defaultNamespace string, scoper Scoper) (*Set, *Parsed, error) {
	parsed := &Parsed{byText: map[[sha256.Size]byte]remembered{}}
	set, err := split(name, manifest, defaultNamespace, scoper, parsed, nil)
	return set, parsed, err
}

// SplitSharing is Split, taking the documents of the same text from parsed
// (nil: none) instead of parsing them again.
func SplitSharing(name, manifest, defaultNamespace string, scoper Scoper, parsed *Parsed) (*Set, error) {
	return split(name, manifest, defaultNamespace, scoper, nil, parsed)
}

// remember keeps d, a document split and given its namespace, for share.
// The top-level map is copied (the first object's gets a metadata map of
// its own when its metadata changes); the rest is shared.
func (p *Parsed) remember(d doc) {
	if p == nil || d.digest == nil {
		return
	}
	content := d.content
	if d.encoded == nil {
		content = maps.Clone(content)
	}
	p.byText[*d.digest] = remembered{content: content, encoded: d.encoded, namespace: d.namespace}
}

// share returns what is remembered for the document of digest, the
// content in a map of its own (a lazy document's head as it is: nothing
// changes it); false if there is none.
func (p *Parsed) share(digest *[sha256.Size]byte) (remembered, bool) {
	if p == nil {
		return remembered{}, false
	}
	r, ok := p.byText[*digest]
	if ok && r.encoded == nil {
		r.content = maps.Clone(r.content)
	}
	return r, ok
}

// SplitAdding is SplitSharing that also remembers, in parsed, the
// documents it parsed: a plan that split the last release first shares
// them with the new render, and the new render's with a second render.
func SplitAdding(name, manifest, defaultNamespace string, scoper Scoper, parsed *Parsed) (*Set, error) {
	return split(name, manifest, defaultNamespace, scoper, parsed, parsed)
}

// split reads manifest's documents (sharing what like parsed of the same
// text, remembering what it parses in remember), flattens the lists among
// them, and makes each an Object.
func split(name, manifest, defaultNamespace string, scoper Scoper, remember, like *Parsed) (*Set, error) {
	set := NewSet()
	lazily := remember != nil || like != nil
	read, readErr := readDocuments(manifest, lazily, like)
	parseAll(read, lazily)
	docs, crdScopes, err := flattenAll(name, read, readErr)
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		o, err := object(name, d, defaultNamespace, scoper, crdScopes)
		if err != nil {
			return nil, err
		}
		remember.remember(d)
		if err := set.Add(o); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return set, nil
}

// flattenAll is the documents read, lists flattened into their items and
// empty documents left out, with the scope each CRD among them gives its
// kind; the first document's error, else readErr, stops it.
func flattenAll(name string, read []readDoc, readErr error) ([]doc, map[schema.GroupKind]bool, error) {
	crdScopes := map[schema.GroupKind]bool{}
	var docs []doc
	for _, r := range read {
		d := r.doc
		if r.err != nil {
			return nil, nil, fmt.Errorf("%s: document %d (%s): %w", name, d.index, d.source, r.err)
		}
		if len(d.content) == 0 {
			continue
		}
		items, err := flatten(d)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, item := range items {
			docs = append(docs, item)
			if gk, namespaced, ok := crdScope(item.content); ok {
				crdScopes[gk] = namespaced
			}
		}
	}
	if readErr != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, readErr)
	}
	return docs, crdScopes, nil
}

// object is the Object of document d, in its namespace: the document's,
// else defaultNamespace, none for a cluster-scoped kind (scoper's, or a
// CRD's of the same manifest; an unknown kind counts as namespaced).
func object(name string, d doc, defaultNamespace string, scoper Scoper, crdScopes map[schema.GroupKind]bool) (*Object, error) {
	obj := &unstructured.Unstructured{Object: d.content}
	gvk := obj.GroupVersionKind()
	where := d.where()
	if gvk.Kind == "" || gvk.Version == "" {
		return nil, fmt.Errorf("%s: %s: object has no apiVersion or kind", name, where)
	}
	if obj.GetName() == "" {
		return nil, fmt.Errorf("%s: %s: %s has no metadata.name", name, where, gvk.Kind)
	}
	namespaced, known, err := scoper.IsNamespaced(gvk)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %s %q: %w", name, where, gvk.Kind, obj.GetName(), err)
	}
	if !known {
		// A CRD in the same manifest tells the scope of its kind.
		namespaced, known = crdScopes[gvk.GroupKind()]
		if !known {
			namespaced = true
		}
	}
	// From the namespace the document gave: a shared document's
	// metadata holds the one the first Split set.
	ns := d.namespace
	switch {
	case !namespaced:
		ns = ""
	case ns == "":
		ns = defaultNamespace
	}
	o := &Object{
		ID:     ObjectID{Group: gvk.Group, Kind: gvk.Kind, Namespace: ns, Name: obj.GetName()},
		GVK:    gvk,
		Source: d.source,
		Obj:    obj,
	}
	switch {
	case d.encoded != nil:
		// Decoded by Load, in the namespace set here; the head is
		// the document's, shared.
		o.Obj, o.lazy = nil, &lazy{doc: d.encoded, namespace: ns}
	case obj.GetNamespace() == ns:
	case d.shared:
		setNamespace(obj, ns) // in metadata of its own
	default:
		obj.SetNamespace(ns)
	}
	return o, nil
}

// readDoc is one document of a manifest as read: its text until it is
// parsed, and the error parsing it gave.
type readDoc struct {
	doc
	raw []byte
	err error
}

// readDocuments returns the documents of manifest in order, with their
// digests (lazily: for Parsed) and, where like holds one of the same text,
// its parsed content, and the error that stopped the reading, naming its
// document (nil at the end of the stream). Nothing is parsed yet.
func readDocuments(manifest string, lazily bool, like *Parsed) ([]readDoc, error) {
	var read []readDoc
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	for i := 1; ; i++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return read, nil
		}
		if err != nil {
			return read, fmt.Errorf("document %d: %w", i, err)
		}
		r := readDoc{doc: doc{index: i, source: sourceOf(raw)}, raw: raw}
		if lazily {
			// Documents are told apart by a digest of their text: the
			// texts themselves are the manifest's size again.
			sum := digest(raw)
			r.digest = &sum
		}
		if m, ok := like.share(r.digest); ok {
			r.content, r.encoded, r.namespace = m.content, m.encoded, m.namespace
			r.shared, r.digest, r.raw = true, nil, nil
		}
		read = append(read, r)
	}
}

// parseAll parses the documents of read not shared yet, as Split parses
// one (lazily: parseLazily), spread over GOMAXPROCS goroutines: documents
// parse independently, and YAML to JSON is most of a split's time. Each
// document's error stays with it, so the first in the manifest's order is
// the one reported, as when they were parsed one after the other.
func parseAll(read []readDoc, lazily bool) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(read)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(read); i = int(next.Add(1)) - 1 {
				parseOne(&read[i], lazily)
			}
		})
	}
	wg.Wait()
}

// parseOne parses r unless it is shared, and drops its text.
func parseOne(r *readDoc, lazily bool) {
	defer panics.Catch(&r.err) // a panic in a goroutine would exit 2, the gate's code
	if r.shared {
		return
	}
	raw := r.raw
	r.raw = nil
	if lazily {
		r.content, r.encoded, r.err = parseLazily(raw)
	} else {
		r.err = yaml.Unmarshal(raw, &r.content)
	}
	if r.err == nil {
		r.namespace, _, _ = unstructured.NestedString(r.content, "metadata", "namespace")
	}
}

type doc struct {
	index   int
	source  string
	content map[string]interface{}
	// namespace is metadata.namespace as the document gave it.
	namespace string
	// digest identifies the document's text for Parsed (nil: not
	// remembered, as a List's items); shared: its content is another
	// object's.
	digest *[sha256.Size]byte
	shared bool
	// encoded, when set, is the document to decode later (see Load);
	// content is then its head alone.
	encoded *encoded
	// item is the 1-based position of an object in the List it came from
	// (0: a document of its own).
	item int
}

// where names the document in errors: its source template, else its
// position, and the item of a List.
func (d doc) where() string {
	w := d.source
	if w == "" {
		w = fmt.Sprintf("document %d", d.index)
	}
	if d.item > 0 {
		w += fmt.Sprintf(" (List item %d)", d.item)
	}
	return w
}

// flatten returns the objects of d: d itself, or the items of a List as
// Helm's kube client builds them (the resource builder with Flatten(),
// k8s.io/cli-runtime FlattenListVisitor, decoding with
// unstructured.UnstructuredJSONScheme):
//
//   - any document with a top-level "items" field is a list, whatever its
//     kind (v1 List, ConfigMapList, ...); "items: null" is an empty list;
//   - an item without both apiVersion and kind takes the List's apiVersion
//     and its kind without the "List" suffix;
//   - an item that is itself a list is refused, as Helm refuses it;
//   - items keep the List's "# Source:" template.
//
// The List itself is not an object: Helm never creates or deletes it, only
// its items.
func flatten(d doc) ([]doc, error) {
	raw, isList := d.content["items"]
	if !isList {
		return []doc{d}, nil
	}
	list := &unstructured.Unstructured{Object: d.content}
	if list.GetKind() == "" || list.GetAPIVersion() == "" {
		return nil, fmt.Errorf("%s: list has no apiVersion or kind", d.where())
	}
	if raw == nil {
		return nil, nil
	}
	items, ok := raw.([]interface{})
	if !ok {
		return nil, fmt.Errorf("%s: %s: items is not a list", d.where(), list.GetKind())
	}
	out := make([]doc, 0, len(items))
	for i, it := range items {
		item := doc{index: d.index, source: d.source, item: i + 1, shared: d.shared}
		content, ok := it.(map[string]interface{})
		if !ok {
			return nil, fmt.Errorf("%s: %s item is not an object", item.where(), list.GetKind())
		}
		item.namespace, _, _ = unstructured.NestedString(content, "metadata", "namespace")
		if _, nested := content["items"].([]interface{}); nested {
			return nil, fmt.Errorf("%s: a list inside a %s is not supported (Helm refuses it too)", item.where(), list.GetKind())
		}
		u := &unstructured.Unstructured{Object: content}
		if u.GetKind() == "" && u.GetAPIVersion() == "" {
			u.SetKind(strings.TrimSuffix(list.GetKind(), "List"))
			u.SetAPIVersion(list.GetAPIVersion())
		}
		item.content = content
		out = append(out, item)
	}
	return out, nil
}

func sourceOf(raw []byte) string {
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if s, ok := strings.CutPrefix(strings.TrimSpace(string(line)), sourcePrefix); ok {
			return s
		}
	}
	return ""
}

// crdScope reads group, kind and scope from a CustomResourceDefinition.
func crdScope(content map[string]interface{}) (schema.GroupKind, bool, bool) {
	u := unstructured.Unstructured{Object: content}
	if u.GetKind() != "CustomResourceDefinition" {
		return schema.GroupKind{}, false, false
	}
	group, _, _ := unstructured.NestedString(content, "spec", "group")
	kind, _, _ := unstructured.NestedString(content, "spec", "names", "kind")
	scope, _, _ := unstructured.NestedString(content, "spec", "scope")
	return schema.GroupKind{Group: group, Kind: kind}, scope != "Cluster", true
}

// CRDKinds returns the kinds defined by CustomResourceDefinitions in s.
func CRDKinds(s *Set) map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for _, o := range s.Objects() {
		if !o.Loaded() {
			continue // never a CRD: those are decoded at once
		}
		if gk, _, ok := crdScope(o.Obj.Object); ok {
			out[gk] = true
		}
	}
	return out
}

// setNamespace sets obj's namespace in a metadata map of its own (see
// Parsed), dropping the field for "" as unstructured does.
func setNamespace(obj *unstructured.Unstructured, ns string) {
	md, _ := obj.Object["metadata"].(map[string]interface{})
	md = maps.Clone(md)
	if md == nil {
		md = map[string]interface{}{}
	}
	if ns == "" {
		delete(md, "namespace")
	} else {
		md["namespace"] = ns
	}
	obj.Object["metadata"] = md
}
