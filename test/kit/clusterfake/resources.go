package clusterfake

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Resources fakes the guard's Resources over a dynamic client (client-go's
// fake one in tests): Served maps each kind the cluster serves to its
// resource (cluster-scoped); any other kind is not served, as before
// Kubernetes 1.30 for the admission policies.
type Resources struct {
	Dynamic dynamic.Interface
	Served  map[schema.GroupVersionKind]schema.GroupVersionResource
}

// Resource implements guard.Resources.
// A namespace given is a namespaced kind's: its client is the namespace's.
func (r Resources) Resource(gvk schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, *meta.RESTMapping, error) {
	gvr, ok := r.Served[gvk]
	if !ok {
		return nil, nil, fmt.Errorf("no matches for kind %q in version %q", gvk.Kind, gvk.GroupVersion())
	}
	if namespace != "" {
		return r.Dynamic.Resource(gvr).Namespace(namespace), &meta.RESTMapping{Resource: gvr, GroupVersionKind: gvk, Scope: meta.RESTScopeNamespace}, nil
	}
	return r.Dynamic.Resource(gvr), &meta.RESTMapping{Resource: gvr, GroupVersionKind: gvk, Scope: meta.RESTScopeRoot}, nil
}
