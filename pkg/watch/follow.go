package watch

import (
	"context"
	"fmt"
	"math"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	kwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/clock"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
)

// groups are the LIST+WATCHes that follow the targets, one per resource
// and namespace, with the names of each.
func (w *Watcher) groups() map[groupKey]map[string]bool {
	groups := map[groupKey]map[string]bool{}
	for _, t := range w.targets {
		if t.group.gvr.Resource == "" {
			continue
		}
		if groups[t.group] == nil {
			groups[t.group] = map[string]bool{}
		}
		groups[t.group][t.change.ID.Name] = true
	}
	return groups
}

// podGroups are the LIST+WATCHes Snapshot starts: of pods in each
// namespace holding workloads, of claims in each holding StatefulSets.
func (w *Watcher) podGroups() []groupKey {
	seen := map[groupKey]bool{}
	var out []groupKey
	add := func(k groupKey) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	for _, t := range w.targets {
		if t.workload() {
			add(groupKey{live.PodsGVR, t.change.ID.Namespace})
		}
		if t.gvk.Kind == "StatefulSet" {
			add(groupKey{live.ClaimsGVR, t.change.ID.Namespace})
		}
	}
	return out
}

// start begins the life of the watch's LIST+WATCHes, under ctx, with no
// group followed yet.
func (w *Watcher) start(ctx context.Context) {
	w.life, w.stop = context.WithCancel(ctx)
	w.feed = &feed{notify: make(chan struct{}, 1)}
	w.following = map[groupKey]bool{}
}

// followInto follows group k (only names, when given) from resource
// version from ("": after a LIST) into the feed, until Run ends or Stop.
func (w *Watcher) followInto(k groupKey, names map[string]bool, from string) {
	w.following[k] = true
	life, feed := w.life, w.feed
	go followGroup(life, w.reader, k, names, from, func(u update) bool { feed.put(u); return life.Err() == nil }, &w.requests)
}

// list is one LIST of group k (only names, when given).
func (w *Watcher) list(ctx context.Context, k groupKey, names map[string]bool) (*view, error) {
	return listGroup(ctx, listWatch(w.reader, k, names, &w.requests), k, names)
}

// listGroup is one LIST of group k through lw, of names only when given.
func listGroup(ctx context.Context, lw *cache.ListWatch, k groupKey, names map[string]bool) (*view, error) {
	got, err := lw.ListWithContext(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	list, ok := got.(*unstructured.UnstructuredList)
	if !ok || list == nil {
		return nil, fmt.Errorf("the LIST of %s in namespace %q answered no list", k.gvr.Resource, k.ns)
	}
	v := &view{objs: make(map[string]*unstructured.Unstructured, len(list.Items)), rv: list.GetResourceVersion()}
	for i := range list.Items {
		if o := &list.Items[i]; names == nil || names[o.GetName()] {
			v.objs[o.GetName()] = o
		}
	}
	return v, nil
}

// nameSelector selects the one name of a group by field, so that a
// Deployment alone in its namespace does not LIST and WATCH every other.
func nameSelector(names map[string]bool) string {
	if len(names) == 1 {
		for n := range names {
			return "metadata.name=" + n
		}
	}
	return ""
}

// listWatch is the LIST and WATCH of group k through r as client-go's
// watch tools take them, of names only when one (see nameSelector), each
// request counted in count.
func listWatch(r live.Reader, k groupKey, names map[string]bool, count *requestCount) *cache.ListWatch {
	selector := nameSelector(names)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			count.add(k.gvr, false)
			list, err := r.List(ctx, k.gvr, k.ns, opts)
			if err != nil {
				return nil, err
			}
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (kwatch.Interface, error) {
			opts.FieldSelector = selector
			count.add(k.gvr, true)
			wi, err := r.Watch(ctx, k.gvr, k.ns, opts)
			if status, ok := err.(apierrors.APIStatus); ok && (apierrors.IsResourceExpired(err) || apierrors.IsGone(err)) {
				// Said as the event that ends the watch: the
				// RetryWatcher would WATCH from that version again.
				st := status.Status()
				ch := make(chan kwatch.Event, 1)
				ch <- kwatch.Event{Type: kwatch.Error, Object: &st}
				close(ch)
				return kwatch.NewProxyWatcher(ch), nil
			}
			return wi, err
		},
	}
}

// followGroup WATCHes the objects of group k (only names, when given)
// from resource version from, after a LIST when from is "", handing each
// to send, until ctx is done or send returns false. client-go's
// RetryWatcher starts a WATCH the API server ends again from the last
// version seen (its bookmarks' included). When that version is gone (410)
// the group is LISTed again at once; after a LIST that failed or a WATCH
// refused, again after the backoff client-go's reflector waits. A first
// LIST refused for good (forbidden, not found, not served) makes the
// group one that cannot be followed.
func followGroup(ctx context.Context, r live.Reader, k groupKey, names map[string]bool, from string, send func(update) bool, count *requestCount) {
	lw := listWatch(r, k, names, count)
	keep := func(o *unstructured.Unstructured) bool { return names == nil || names[o.GetName()] }
	rv, listed := from, from != ""
	gone := false // the last round's version is gone: no wait before the next
	backoff := wait.Backoff{Duration: 800 * time.Millisecond, Factor: 2, Jitter: 1, Steps: math.MaxInt32, Cap: 30 * time.Second}.
		DelayWithReset(clock.RealClock{}, 2*time.Minute)
	next := wait.DelayFunc(func() time.Duration {
		if gone {
			return 0
		}
		return backoff()
	})
	_ = next.Until(ctx, true, true, func(ctx context.Context) (done bool, _ error) {
		gone = false
		if rv == "" {
			v, err := listGroup(ctx, lw, k, names)
			if err != nil {
				if !listed && (apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err)) {
					send(update{group: k, err: err})
					return true, nil
				}
				return false, nil
			}
			rv, listed = v.rv, true
			if !send(update{group: k, listed: true, list: v.objs, rv: rv}) {
				return true, nil
			}
		}
		rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, lw)
		if err != nil {
			rv = "" // a version no WATCH starts from ("0"): LIST again
			return false, nil
		}
		defer rw.Stop()
		// Its events end when ctx is done, or after an Error event: 410
		// Gone, a WATCH refused.
		for ev := range rw.ResultChan() {
			o, ok := ev.Object.(*unstructured.Unstructured)
			switch {
			case ev.Type == kwatch.Error:
				err := apierrors.FromObject(ev.Object)
				rv, gone = "", apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
			case !ok:
			case !keep(o):
				rv = o.GetResourceVersion()
			default:
				rv = o.GetResourceVersion()
				if !send(update{group: k, obj: o, deleted: ev.Type == kwatch.Deleted, rv: rv}) {
					return true, nil
				}
			}
		}
		return ctx.Err() != nil, nil
	})
}
