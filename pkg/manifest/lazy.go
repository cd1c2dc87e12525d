package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// The planner's splits (SplitRemembering, SplitSharing) keep most objects
// encoded until their evaluation (Load): a parsed object is several times
// its JSON, and a plan evaluates the objects of a release one by one after
// splitting them all. Split reads from each document only its head
// (apiVersion, kind, metadata); the objects read before their evaluation
// are decoded at once (eagerly): Lists (flattened into their items),
// CustomResourceDefinitions (they scope their kind), and whatever may hold
// a secret value (data, stringData, a Secret, kubectl's last-applied copy),
// which the sanitiser collects before anything is planned.

// encoded is one document as JSON, the conversion sigs.k8s.io/yaml makes
// before it decodes.
type encoded struct {
	json []byte
}

// lazy is an object not decoded yet: its document and the namespace Split
// gave it.
type lazy struct {
	doc       *encoded
	namespace string
}

// eagerKeys are the top-level fields that make a document decoded at once.
var eagerKeys = []string{"items", "data", "stringData"}

// parseLazily parses raw, one YAML document, as yaml.Unmarshal into a map
// does. It returns the whole content, or, for a document that can wait, its
// head and its JSON to decode later.
func parseLazily(raw []byte) (map[string]interface{}, *encoded, error) {
	j, err := yaml.YAMLToJSON(raw)
	var top map[string]json.RawMessage
	if err == nil {
		err = json.Unmarshal(j, &top)
	}
	if err != nil {
		// yaml.Unmarshal's own error (or, should the two disagree, its
		// content): not parsed otherwise than Split parses.
		var content map[string]interface{}
		if err := yaml.Unmarshal(raw, &content); err != nil {
			return nil, nil, err
		}
		return content, nil, nil
	}
	if len(top) == 0 {
		return nil, nil, nil // an empty document
	}
	head := make(map[string]interface{}, 3)
	for _, k := range []string{"apiVersion", "kind", "metadata"} {
		if v, ok := top[k]; ok {
			var x interface{}
			if err := json.Unmarshal(v, &x); err != nil {
				return decodeAll(j)
			}
			head[k] = x
		}
	}
	if eager(top, head) {
		return decodeAll(j)
	}
	return head, &encoded{json: j}, nil
}

// eager reports whether a document is decoded at once.
func eager(top map[string]json.RawMessage, head map[string]interface{}) bool {
	for _, k := range eagerKeys {
		if _, ok := top[k]; ok {
			return true
		}
	}
	kind, _ := head["kind"].(string)
	if strings.EqualFold(kind, "Secret") || kind == "CustomResourceDefinition" {
		return true
	}
	md, _ := head["metadata"].(map[string]interface{})
	ann, _ := md["annotations"].(map[string]interface{})
	_, lastApplied := ann[redact.LastAppliedAnnotation]
	return lastApplied
}

// decodeAll decodes j as yaml.Unmarshal does after its conversion.
func decodeAll(j []byte) (map[string]interface{}, *encoded, error) {
	content, err := decode(j)
	return content, nil, err
}

func decode(j []byte) (map[string]interface{}, error) {
	var content map[string]interface{}
	if err := json.NewDecoder(bytes.NewReader(j)).Decode(&content); err != nil {
		return nil, fmt.Errorf("error unmarshaling JSON: while decoding JSON: %w", err)
	}
	return content, nil
}

// Loaded reports whether o's Obj is decoded (always, but for the objects
// of the planner's splits before Load).
func (o *Object) Loaded() bool { return o.lazy == nil }

// Load decodes o if it is not yet (see Loaded); o.Obj is set after it.
func (o *Object) Load() error {
	return LoadPair(o, nil)
}

// LoadPair loads a and b (either may be nil), an object's last-release and
// new forms: when both are the same document, it is decoded once and its
// content shared (metadata copied when it changes, as SplitSharing's).
func LoadPair(a, b *Object) error {
	if SameDocument(a, b) {
		content, err := decode(a.lazy.doc.json)
		if err != nil {
			return fmt.Errorf("%s: %w", a.ID, err)
		}
		a.loaded(content)
		b.loaded(maps.Clone(content))
		return nil
	}
	for _, o := range []*Object{a, b} {
		if o == nil || o.Loaded() {
			continue
		}
		content, err := decode(o.lazy.doc.json)
		if err != nil {
			return fmt.Errorf("%s: %w", o.ID, err)
		}
		o.loaded(content)
	}
	return nil
}

// loaded sets o's decoded content, in the namespace Split gave it.
func (o *Object) loaded(content map[string]interface{}) {
	obj := &unstructured.Unstructured{Object: content}
	if obj.GetNamespace() != o.lazy.namespace {
		setNamespace(obj, o.lazy.namespace)
	}
	o.Obj, o.lazy = obj, nil
}

// Decoded returns o's object, decoding it for the caller alone if o is not
// loaded (o stays as it is).
func (o *Object) Decoded() (*unstructured.Unstructured, error) {
	if o.Loaded() {
		return o.Obj, nil
	}
	c := &Object{ID: o.ID, lazy: o.lazy}
	if err := c.Load(); err != nil {
		return nil, err
	}
	return c.Obj, nil
}

// SameDocument reports whether a and b, neither loaded, are the same
// document (their content is equal).
func SameDocument(a, b *Object) bool {
	return a != nil && b != nil && !a.Loaded() && !b.Loaded() && a.lazy.doc == b.lazy.doc
}
