// Package live is every read of the cluster: the state of a release's
// objects, and what the planner, apply and the watch ask besides (claims,
// volumes, budgets, namespaces, Helm's release records, the journal and
// the Lease, LIST and WATCH), so the other stages ask small interfaces and
// tests swap one thing. Reads inside a write's retry loop stay with the
// writer.
package live

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

// DefaultConcurrency bounds the GETs in flight: enough to hide latency on a
// 1000-object release without tripping client-side rate limits.
const DefaultConcurrency = 16

// Cluster gives typed access to objects through a RESTMapper and a dynamic
// client; it is the only place that turns a GVK into a REST resource.
type Cluster struct {
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
	// REST, when set, is the REST client under Dynamic: paged LISTs read
	// through it keep each object as the JSON the server sent (see
	// State.Decode). nil: LISTs go through Dynamic and their objects are
	// encoded again (clients faked in tests).
	REST rest.Interface
}

// ErrNoServer is what is answered offline, where no API server can be
// asked (a dry-run, a list of claims or budgets, a schema).
var ErrNoServer = errors.New("no API server to ask (offline)")

// KindNotServedError says the cluster maps a kind to no API resource (a
// removed API version, a CRD not installed); meta.IsNoMatchError sees
// through it.
type KindNotServedError struct {
	GVK schema.GroupVersionKind
	Err error
}

func (e *KindNotServedError) Error() string {
	return fmt.Sprintf("no API resource for %s: %v", e.GVK, e.Err)
}

func (e *KindNotServedError) Unwrap() error { return e.Err }

// Resource returns the dynamic client for obj's kind and namespace; a
// *KindNotServedError when the cluster does not serve the kind.
func (c *Cluster) Resource(gvk schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, *meta.RESTMapping, error) {
	mapping, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, nil, &KindNotServedError{GVK: gvk, Err: err}
	}
	ri := c.Dynamic.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return ri.Namespace(namespace), mapping, nil
	}
	return ri, mapping, nil
}

// IsNamespaced implements manifest.Scoper from the cluster's discovery data.
func (c *Cluster) IsNamespaced(gvk schema.GroupVersionKind) (bool, bool, error) {
	mapping, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	return mapping.Scope.Name() == meta.RESTScopeNameNamespace, true, nil
}

// State is the live state of one object: Obj is nil when it does not exist,
// unless the state is a LIST's object not decoded yet (see Decode).
type State struct {
	Obj *unstructured.Unstructured
	Err error
	// listed is the object as its LIST sent it, until Decode: a plan holds
	// every listed object from its LIST to its evaluation, and an
	// unstructured map is 4 to 9 times the JSON it is decoded from.
	listed *listed
}

// Fetch GETs every object concurrently (at most concurrency in flight) and
// returns their states by identity. NotFound is not an error: the object will
// be created. Other errors are kept per object, naming the verb and resource.
func (c *Cluster) Fetch(ctx context.Context, objs []*manifest.Object, concurrency int) map[manifest.ObjectID]State {
	if concurrency < 1 {
		concurrency = DefaultConcurrency
	}
	states := make([]State, len(objs))
	var g errgroup.Group
	g.SetLimit(concurrency)
	for i, o := range objs {
		g.Go(func() error {
			states[i] = c.Get(ctx, o)
			return nil
		})
	}
	_ = g.Wait() // per-object errors are in the states
	out := make(map[manifest.ObjectID]State, len(objs))
	for i, o := range objs {
		out[o.ID] = states[i]
	}
	return out
}

// Get reads one object's live state.
func (c *Cluster) Get(ctx context.Context, o *manifest.Object) State {
	ri, mapping, err := c.Resource(o.GVK, o.ID.Namespace)
	if err != nil {
		if meta.IsNoMatchError(err) {
			// The kind is not served (yet): its CRD may come with this release.
			return State{}
		}
		return State{Err: fmt.Errorf("%s: %w", o.ID, err)}
	}
	obj, err := ri.Get(ctx, o.ID.Name, metav1.GetOptions{})
	switch {
	case err == nil:
		return State{Obj: obj}
	case apierrors.IsNotFound(err):
		return State{}
	case apierrors.IsForbidden(err):
		return State{Err: fmt.Errorf("%s: forbidden: cannot get %s in namespace %q: %w", o.ID, mapping.Resource.GroupResource(), o.ID.Namespace, err)}
	default:
		return State{Err: fmt.Errorf("%s: get: %w", o.ID, err)}
	}
}

// MinListGroup is the number of objects of one kind in one namespace from
// which a LIST is cheaper than a GET each.
const MinListGroup = 8

// ListPage is the most objects one LIST request returns: a page is read,
// the objects asked for are kept (encoded) and the rest dropped before the
// next is requested.
const ListPage = 500

// Lean tells whether o's live form goes without metadata.managedFields
// (server-side apply's field ownership, often half of an object) when it
// is decoded; nil keeps them for every object.
type Lean func(o *manifest.Object) bool

// Prefetch reads, with paged LISTs per kind and namespace, the objects that
// come in groups of at least minGroup, and returns their states, still
// encoded (State.Decode decodes each, without managedFields where lean
// says): an object missing from its LIST does not exist. Objects in
// smaller groups, or whose LIST failed (RBAC may allow get but not list),
// are left for Get. A group early listed already (nil: none) is taken from
// it rather than listed again.
func (c *Cluster) Prefetch(ctx context.Context, objs []*manifest.Object, minGroup int, lean Lean, early *Early) map[manifest.ObjectID]State {
	groups := map[groupKey][]*manifest.Object{}
	for _, o := range objs {
		k := groupKey{o.GVK, o.ID.Namespace}
		groups[k] = append(groups[k], o)
	}
	out := map[manifest.ObjectID]State{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for k, members := range groups {
		if len(members) < minGroup {
			continue
		}
		if states, ok := early.states(k, members, lean); ok {
			mu.Lock()
			maps.Copy(out, states)
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			states, err := c.list(ctx, k.gvk, k.namespace, members, lean)
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			maps.Copy(out, states)
		}()
	}
	wg.Wait()
	return out
}

// list reads the states of members, objects of gvk in namespace, page by
// page. Only members are kept: the other objects of the kind (other
// releases, Helm's own release records) are garbage once their page is read.
func (c *Cluster) list(ctx context.Context, gvk schema.GroupVersionKind, namespace string, members []*manifest.Object, lean Lean) (map[manifest.ObjectID]State, error) {
	byName := make(map[string]*manifest.Object, len(members))
	for _, o := range members {
		byName[o.ID.Name] = o
	}
	states := make(map[manifest.ObjectID]State, len(members))
	keep := func(name string) bool { return byName[name] != nil }
	err := c.pages(ctx, gvk, namespace, nil, keep, func(name string, l *listed) {
		o := byName[name]
		states[o.ID] = l.state(o, lean)
	})
	if err != nil {
		return nil, err
	}
	for _, o := range members {
		if _, ok := states[o.ID]; !ok {
			states[o.ID] = State{} // absent: to be created
		}
	}
	return states, nil
}
