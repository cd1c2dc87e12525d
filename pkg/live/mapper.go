package live

import (
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Memoized returns m remembering RESTMapping's answers (errors included) per
// kind and versions asked. For a mapper built once from discovery
// (restmapper.NewDiscoveryRESTMapper) the answers never change, and a plan
// asks the same few kinds for every object, several times each (splitting
// the manifests, every request): m searches all the cluster's groups each
// time.
func Memoized(m meta.RESTMapper) meta.RESTMapper {
	return &memoMapper{RESTMapper: m, answers: map[string]mappingAnswer{}}
}

type memoMapper struct {
	meta.RESTMapper

	mu      sync.Mutex
	answers map[string]mappingAnswer
}

type mappingAnswer struct {
	mapping *meta.RESTMapping
	err     error
}

func (m *memoMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	key := gk.String() + "/" + strings.Join(versions, ",")
	m.mu.Lock()
	a, ok := m.answers[key]
	m.mu.Unlock()
	if !ok {
		a.mapping, a.err = m.RESTMapper.RESTMapping(gk, versions...)
		m.mu.Lock()
		m.answers[key] = a
		m.mu.Unlock()
	}
	if a.mapping == nil {
		return nil, a.err
	}
	copied := *a.mapping // callers own what they are given, as from m
	return &copied, a.err
}
