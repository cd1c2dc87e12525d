package clusterfake

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// Reader is an in-memory live.Reader, what the rollout watch reads through.
// Unlike client-go's fake dynamic client, its WATCH starts at the resource
// version it is given: it replays every change made since, as the API
// server does, so a watch started from a LIST taken before a write sees
// that write. It holds objects by resource, namespace and name,
// and the log of their changes.
type Reader struct {
	mu       sync.Mutex
	rv       int64
	kinds    map[schema.GroupVersionKind]kind
	objs     map[key]*unstructured.Unstructured
	changes  []change
	watchers []*watcher
	logs     map[string]string
	// compacted: a WATCH from a version at or below it is answered with
	// 410 Gone, as after etcd's compaction.
	compacted int64
	calls     map[string]int
}

type kind struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

type key struct {
	gvr       schema.GroupVersionResource
	namespace string
	name      string
}

type change struct {
	key key
	ev  watch.Event
	rv  int64
}

// New returns an empty Reader.
func NewReader() *Reader {
	return &Reader{kinds: map[schema.GroupVersionKind]kind{}, objs: map[key]*unstructured.Unstructured{},
		logs: map[string]string{}, calls: map[string]int{}}
}

// AddKind maps gvk to gvr.
func (r *Reader) AddKind(gvk schema.GroupVersionKind, gvr schema.GroupVersionResource, namespaced bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kinds[gvk] = kind{gvr, namespaced}
}

// Put creates or replaces o (a copy) in gvr, giving it the next resource
// version, and tells the watches.
func (r *Reader) Put(gvr schema.GroupVersionResource, o *unstructured.Unstructured) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := key{gvr, o.GetNamespace(), o.GetName()}
	typ := watch.Modified
	if r.objs[k] == nil {
		typ = watch.Added
	}
	o = o.DeepCopy()
	r.rv++
	o.SetResourceVersion(strconv.FormatInt(r.rv, 10))
	r.objs[k] = o
	r.record(k, watch.Event{Type: typ, Object: o.DeepCopy()})
}

// Delete removes an object and tells the watches; nothing when absent.
func (r *Reader) Delete(gvr schema.GroupVersionResource, namespace, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := key{gvr, namespace, name}
	o := r.objs[k]
	if o == nil {
		return
	}
	delete(r.objs, k)
	r.rv++
	o = o.DeepCopy()
	o.SetResourceVersion(strconv.FormatInt(r.rv, 10))
	r.record(k, watch.Event{Type: watch.Deleted, Object: o})
}

// SetLog sets the log PodLog returns for a container.
func (r *Reader) SetLog(namespace, pod, container, log string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs[namespace+"/"+pod+"/"+container] = log
}

// Calls is how many LISTs and WATCHes were asked of resource (as "pods").
func (r *Reader) Calls(resource string) (lists, watches int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[resource+" LIST"], r.calls[resource+" WATCH"]
}

func (r *Reader) record(k key, ev watch.Event) {
	r.changes = append(r.changes, change{k, ev, r.rv})
	for _, w := range r.watchers {
		if w.matches(k, ev.Object.(*unstructured.Unstructured)) {
			w.push(ev)
		}
	}
}

// Mapping implements live.Reader.
func (r *Reader) Mapping(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k, ok := r.kinds[gvk]
	if !ok {
		return schema.GroupVersionResource{}, false, fmt.Errorf("no API resource for %s", gvk)
	}
	return k.gvr, k.namespaced, nil
}

// List implements live.Reader: the selectors honoured are labelSelector and
// fieldSelector metadata.name=NAME.
func (r *Reader) List(_ context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	f, err := newFilter(gvr, namespace, opts)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[gvr.Resource+" LIST"]++
	list := &unstructured.UnstructuredList{}
	list.SetResourceVersion(strconv.FormatInt(r.rv, 10))
	for k, o := range r.objs {
		if f.matches(k, o) {
			list.Items = append(list.Items, *o.DeepCopy())
		}
	}
	return list, nil
}

// Watch implements live.Reader: from opts.ResourceVersion, every change
// made after it, then every new one; 410 Gone when it was compacted.
func (r *Reader) Watch(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (watch.Interface, error) {
	f, err := newFilter(gvr, namespace, opts)
	if err != nil {
		return nil, err
	}
	from, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("watch %s: resource version %q: %w", gvr.Resource, opts.ResourceVersion, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[gvr.Resource+" WATCH"]++
	w := &watcher{filter: f, result: make(chan watch.Event), wake: make(chan struct{}, 1), stop: make(chan struct{})}
	if from < r.compacted {
		w.push(gone(r.compacted))
	} else {
		for _, c := range r.changes {
			if c.rv > from && f.matches(c.key, c.ev.Object.(*unstructured.Unstructured)) {
				w.push(c.ev)
			}
		}
		r.watchers = append(r.watchers, w)
	}
	go w.run(ctx)
	return w, nil
}

// PodLog implements live.Reader: the whole log set by SetLog, whatever
// tail and previous.
func (r *Reader) PodLog(_ context.Context, namespace, pod, container string, _ bool, _ int) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	log, ok := r.logs[namespace+"/"+pod+"/"+container]
	if !ok {
		return "", fmt.Errorf("no log for container %s of pod %s/%s", container, namespace, pod)
	}
	return log, nil
}

type filter struct {
	gvr       schema.GroupVersionResource
	namespace string
	name      string
	labels    labels.Selector
}

func newFilter(gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (*filter, error) {
	f := &filter{gvr: gvr, namespace: namespace, labels: labels.Everything()}
	if opts.LabelSelector != "" {
		sel, err := labels.Parse(opts.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("label selector %q: %w", opts.LabelSelector, err)
		}
		f.labels = sel
	}
	if opts.FieldSelector != "" {
		name, ok := strings.CutPrefix(opts.FieldSelector, "metadata.name=")
		if !ok {
			return nil, fmt.Errorf("field selector %q: only metadata.name= is faked", opts.FieldSelector)
		}
		f.name = name
	}
	return f, nil
}

func (f *filter) matches(k key, o *unstructured.Unstructured) bool {
	return k.gvr == f.gvr && (f.namespace == "" || k.namespace == f.namespace) &&
		(f.name == "" || k.name == f.name) && f.labels.Matches(labels.Set(o.GetLabels()))
}

// watcher queues its events without bound, so that a write never waits
// for a reader.
type watcher struct {
	*filter
	mu       sync.Mutex
	queue    []watch.Event
	wake     chan struct{}
	result   chan watch.Event
	stop     chan struct{}
	stopOnce sync.Once
}

func (w *watcher) push(ev watch.Event) {
	w.mu.Lock()
	w.queue = append(w.queue, ev)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *watcher) run(ctx context.Context) {
	defer close(w.result)
	for {
		w.mu.Lock()
		var ev *watch.Event
		if len(w.queue) > 0 {
			ev = &w.queue[0]
			w.queue = w.queue[1:]
		}
		w.mu.Unlock()
		if ev == nil {
			select {
			case <-w.wake:
				continue
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			}
		}
		select {
		case w.result <- *ev:
		case <-w.stop:
			return
		case <-ctx.Done():
			return
		}
	}
}

// Stop implements watch.Interface.
func (w *watcher) Stop() { w.stopOnce.Do(func() { close(w.stop) }) }

// ResultChan implements watch.Interface.
func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

// ExpireWatches ends every open WATCH with 410 Gone and forgets the
// changes made so far, as the API server does with a watcher too far
// behind: its client must LIST again.
func (r *Reader) ExpireWatches() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.watchers {
		w.push(gone(r.rv))
	}
	r.watchers = nil
	r.compacted, r.changes = r.rv, nil
}

func gone(rv int64) watch.Event {
	err := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version (%d)", rv))
	return watch.Event{Type: watch.Error, Object: &err.ErrStatus}
}
