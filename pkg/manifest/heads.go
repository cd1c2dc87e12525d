package manifest

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Head is what a quick look at one document of a manifest says about its
// object: enough to know which LIST would read it.
type Head struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
}

// Heads scans manifest's documents for their apiVersion, kind and
// metadata.name/namespace without parsing them, so the LISTs the objects
// will need can start before anything else is done with the manifest.
// It is a guess: a document it cannot read plainly (flow style, anchors,
// block scalars, a List) is skipped, and nothing may depend on it but which
// reads start early. Namespaced objects without a namespace get
// defaultNamespace; kinds scoper does not know are skipped.
func Heads(manifest, defaultNamespace string, scoper Scoper) []Head {
	var heads []Head
	for _, doc := range strings.Split(manifest, "\n---") {
		h, ok := head(doc)
		if !ok {
			continue
		}
		namespaced, known, err := scoper.IsNamespaced(h.GVK)
		if err != nil || !known {
			continue
		}
		switch {
		case !namespaced:
			h.Namespace = ""
		case h.Namespace == "":
			h.Namespace = defaultNamespace
		}
		heads = append(heads, h)
	}
	return heads
}

// head reads one document's top-level apiVersion and kind and the name and
// namespace directly under its top-level metadata.
func head(doc string) (Head, bool) {
	var apiVersion, kind, name, namespace string
	inMetadata, indent := false, ""
	for _, line := range strings.Split(doc, "\n") {
		if line == "" || strings.HasPrefix(strings.TrimLeft(line, " "), "#") {
			continue
		}
		if line[0] != ' ' {
			key, value, ok := strings.Cut(line, ":")
			if !ok {
				inMetadata = false
				continue
			}
			value = plain(value)
			inMetadata = key == "metadata" && strings.TrimSpace(value) == ""
			switch key {
			case "apiVersion":
				apiVersion = value
			case "kind":
				kind = value
			}
			continue
		}
		if !inMetadata {
			continue
		}
		rest := strings.TrimLeft(line, " ")
		if indent == "" {
			indent = line[:len(line)-len(rest)]
		}
		if line[:len(line)-len(rest)] != indent {
			continue
		}
		key, value, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		switch key {
		case "name":
			name = plain(value)
		case "namespace":
			namespace = plain(value)
		}
	}
	if apiVersion == "" || kind == "" || name == "" || kind == "List" {
		return Head{}, false
	}
	return Head{GVK: schema.FromAPIVersionAndKind(apiVersion, kind), Namespace: namespace, Name: name}, true
}

// plain is a YAML scalar written plainly or in quotes without escapes; ""
// for anything else.
func plain(value string) string {
	v := strings.TrimSpace(value)
	if i := strings.Index(v, " #"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
		if strings.ContainsAny(v, `\'"`) {
			return ""
		}
		return v
	}
	if v == "" || strings.ContainsAny(v[:1], "{[|>&*!%@`\"'") {
		return ""
	}
	return v
}
