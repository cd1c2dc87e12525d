// Package live reads the cluster state of a release's objects.
package live

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

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
}

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

// State is the live state of one object: Obj is nil when it does not exist.
type State struct {
	Obj *unstructured.Unstructured
	Err error
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
// its objects trimmed and the rest dropped before the next is requested, so
// memory holds one page of a kind's objects as the server sends them, not
// all of them.
const ListPage = 500

// Trim removes from obj, an object just read for o, what the caller will
// not need (nil: keep everything). What it removes depends on o alone.
type Trim func(o *manifest.Object, obj *unstructured.Unstructured)

// Prefetch reads, with paged LISTs per kind and namespace, the objects that
// come in groups of at least minGroup, and returns their states, each
// trimmed by trim: an object missing from its LIST does not exist. Objects
// in smaller groups, or whose LIST failed (RBAC may allow get but not
// list), are left for Get. A group early listed already (nil: none) is
// taken from it rather than listed again.
func (c *Cluster) Prefetch(ctx context.Context, objs []*manifest.Object, minGroup int, trim Trim, early *Early) map[manifest.ObjectID]State {
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
		if states, ok := early.states(k, members, trim); ok {
			mu.Lock()
			maps.Copy(out, states)
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			states, err := c.list(ctx, k.gvk, k.namespace, members, trim)
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for id, st := range states {
				out[id] = st
			}
		}()
	}
	wg.Wait()
	return out
}

// list reads the states of members, objects of gvk in namespace, page by
// page. Only members are kept (as trimmed copies, never pointers into a
// page's items): the other objects of the kind (other releases, Helm's own
// release records) are garbage once their page is read.
func (c *Cluster) list(ctx context.Context, gvk schema.GroupVersionKind, namespace string, members []*manifest.Object, trim Trim) (map[manifest.ObjectID]State, error) {
	byName := make(map[string]*manifest.Object, len(members))
	for _, o := range members {
		byName[o.ID.Name] = o
	}
	states := make(map[manifest.ObjectID]State, len(members))
	keep := func(name string) bool { return byName[name] != nil }
	err := c.pages(ctx, gvk, namespace, nil, keep, func(name string, obj *unstructured.Unstructured) {
		o := byName[name]
		if trim != nil {
			trim(o, obj)
		}
		states[o.ID] = State{Obj: obj}
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

// pages LISTs gvk in namespace page by page and hands each the objects whose
// names keep accepts (keep sees every name), with their apiVersion and kind
// set: items of a LIST carry none of their own. Each request is counted in
// requests, if not nil.
func (c *Cluster) pages(ctx context.Context, gvk schema.GroupVersionKind, namespace string, requests *atomic.Int64, keep func(name string) bool, each func(name string, obj *unstructured.Unstructured)) error {
	ri, _, err := c.Resource(gvk, namespace)
	if err != nil {
		return err
	}
	opts := metav1.ListOptions{Limit: ListPage}
	for {
		if requests != nil {
			requests.Add(1)
		}
		page, err := ri.List(ctx, opts)
		if err != nil {
			return err
		}
		for _, item := range page.Items {
			name := item.GetName()
			if !keep(name) {
				continue
			}
			obj := &unstructured.Unstructured{Object: item.Object}
			obj.SetAPIVersion(page.GetAPIVersion())
			obj.SetKind(gvk.Kind)
			each(name, obj)
		}
		if opts.Continue = page.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}
