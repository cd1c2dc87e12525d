package live

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-openapi/pkg/spec3"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/panics"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

// Schemas reads the server's OpenAPI v3 document of a group-version once
// and turns it into the structured-merge-diff type converter the API
// server's own field manager types objects with: the schemas the server
// publishes are the ones it merges server-side applies by (list types,
// merge keys, atomic maps). Safe for concurrent use.
type Schemas struct {
	cluster *Cluster

	mu  sync.Mutex
	gvs map[schema.GroupVersion]*gvSchema
}

// gvSchema is one group-version's converter, read once.
type gvSchema struct {
	once sync.Once
	tc   managedfields.TypeConverter
	err  error
}

// NewSchemas returns the schemas of c's server, read lazily.
func NewSchemas(c *Cluster) *Schemas {
	return &Schemas{cluster: c, gvs: map[schema.GroupVersion]*gvSchema{}}
}

// errNoREST says there is no raw client to read OpenAPI documents with.
var errNoREST = errors.New("no REST client to read the server's OpenAPI schemas")

// TypeConverter returns the converter of gv's kinds, from the server's
// /openapi/v3 document of gv (one GET per group-version and run).
func (s *Schemas) TypeConverter(ctx context.Context, gv schema.GroupVersion) (managedfields.TypeConverter, error) {
	if s == nil || s.cluster == nil || s.cluster.REST == nil {
		return nil, errNoREST
	}
	s.mu.Lock()
	g, ok := s.gvs[gv]
	if !ok {
		g = &gvSchema{}
		s.gvs[gv] = g
	}
	s.mu.Unlock()
	g.once.Do(func() {
		defer panics.Catch(&g.err) // read by Prefetch's goroutine too
		g.tc, g.err = s.read(ctx, gv)
	})
	return g.tc, g.err
}

// Prefetch starts reading, in the background, the converters of the
// group-versions of heads' built-in kinds (client-go's scheme; the
// published schemas of custom resources are not merged by), each once:
// a server-side apply plan starts it before the render with the last
// release's objects, so that the schemas are read while Helm renders
// rather than while the first object of each group-version waits. A later
// TypeConverter gets the same converter, or waits for its read.
func (s *Schemas) Prefetch(ctx context.Context, heads []manifest.Head) {
	if s == nil || s.cluster == nil || s.cluster.REST == nil {
		return
	}
	seen := map[schema.GroupVersion]bool{}
	for _, h := range heads {
		gv := h.GVK.GroupVersion()
		if seen[gv] || !clientgoscheme.Scheme.Recognizes(h.GVK) {
			continue
		}
		seen[gv] = true
		go func() { _, _ = s.TypeConverter(ctx, gv) }()
	}
}

// read GETs gv's OpenAPI v3 document and builds its converter.
func (s *Schemas) read(ctx context.Context, gv schema.GroupVersion) (managedfields.TypeConverter, error) {
	path := "/openapi/v3/apis/" + gv.Group + "/" + gv.Version
	if gv.Group == "" {
		path = "/openapi/v3/api/" + gv.Version
	}
	raw, err := s.cluster.REST.Get().AbsPath(path).SetHeader("Accept", "application/json").Do(ctx).Raw()
	if err != nil {
		return nil, fmt.Errorf("reading the OpenAPI schema of %s: %w", gv, err)
	}
	doc, err := components(raw)
	if err != nil {
		return nil, fmt.Errorf("decoding the OpenAPI schema of %s: %w", gv, err)
	}
	if doc.Components == nil || len(doc.Components.Schemas) == 0 {
		return nil, fmt.Errorf("the OpenAPI schema of %s has no schemas", gv)
	}
	tc, err := managedfields.NewTypeConverter(doc.Components.Schemas, false)
	if err != nil {
		return nil, fmt.Errorf("typing the OpenAPI schema of %s: %w", gv, err)
	}
	return tc, nil
}

// components decodes the schemas of an OpenAPI v3 document, and only
// them: its paths (three quarters of the v1 document) are skipped, and the
// schemas go straight to spec3's own decoder. The document's top level is
// split by member (a scan of brackets and strings, which checks nothing
// else), not by encoding/json, whose scanner cost as much as decoding the
// schemas; spec3's decoder checks the part it decodes.
func components(raw []byte) (*spec3.OpenAPI, error) {
	c, err := member(raw, "components")
	if err != nil {
		return nil, err
	}
	doc := &spec3.OpenAPI{}
	if c != nil {
		wrapped := append(append([]byte(`{"components":`), c...), '}')
		if err := doc.UnmarshalJSON(wrapped); err != nil {
			return nil, err
		}
	}
	return doc, nil
}

// errNotJSON says a document is not a JSON object.
var errNotJSON = errors.New("not a JSON object")

// member returns the value of the member key of the JSON object raw, as
// it is written; nil if there is none.
func member(raw []byte, key string) ([]byte, error) {
	i := space(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return nil, errNotJSON
	}
	i = space(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return nil, nil
	}
	for i < len(raw) && raw[i] == '"' {
		end := stringEnd(raw, i)
		if end < 0 {
			return nil, errNotJSON
		}
		name := raw[i:end]
		i = space(raw, end)
		if i == len(raw) || raw[i] != ':' {
			return nil, errNotJSON
		}
		start := space(raw, i+1)
		if end = valueEnd(raw, start); end < 0 {
			return nil, errNotJSON
		}
		if len(name) == len(key)+2 && string(name[1:len(name)-1]) == key {
			return raw[start:end], nil
		}
		i = space(raw, end)
		switch {
		case i < len(raw) && raw[i] == ',':
			i = space(raw, i+1)
		case i < len(raw) && raw[i] == '}':
			return nil, nil
		default:
			return nil, errNotJSON
		}
	}
	return nil, errNotJSON
}

// space is the index of the first byte from i on that is not JSON space.
func space(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index just past the string that starts at i (a quote),
// -1 if it does not end.
func stringEnd(raw []byte, i int) int {
	for i++; i < len(raw); i++ {
		switch raw[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// valueEnd is the index just past the value that starts at i: a string, an
// object or an array (brackets counted outside strings), or a literal or
// number; -1 if it does not end.
func valueEnd(raw []byte, i int) int {
	if i == len(raw) {
		return -1
	}
	switch raw[i] {
	case '"':
		return stringEnd(raw, i)
	case '{', '[':
		depth := 0
		for ; i < len(raw); i++ {
			switch raw[i] {
			case '"':
				end := stringEnd(raw, i)
				if end < 0 {
					return -1
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	start := i
	for ; i < len(raw); i++ {
		switch raw[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			if i == start {
				return -1
			}
			return i
		}
	}
	return i
}
