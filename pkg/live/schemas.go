package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/spec3"
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
	g.once.Do(func() { g.tc, g.err = s.read(ctx, gv) })
	return g.tc, g.err
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
// schemas go straight to spec3's own decoder, without encoding/json's
// second scan of every schema before each Schema.UnmarshalJSON: decoding
// was most of the CPU a Helm 4 plan spent on schemas.
func components(raw []byte) (*spec3.OpenAPI, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, err
	}
	doc := &spec3.OpenAPI{}
	if c, ok := top["components"]; ok {
		wrapped := append(append([]byte(`{"components":`), c...), '}')
		if err := doc.UnmarshalJSON(wrapped); err != nil {
			return nil, err
		}
	}
	return doc, nil
}
