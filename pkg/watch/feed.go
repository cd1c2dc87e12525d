package watch

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
)

// view is a group's objects by name as of resource version rv.
type view struct {
	objs map[string]*unstructured.Unstructured
	rv   string
}

// groupKey is one LIST+WATCH of followed objects.
type groupKey struct {
	gvr schema.GroupVersionResource
	ns  string
}

// update is what one LIST or WATCH event says of a group.
type update struct {
	group groupKey
	// listed: a LIST, whose objects (list) replace the group's; else obj
	// is one object a WATCH saw changed (or deleted).
	listed  bool
	list    map[string]*unstructured.Unstructured
	obj     *unstructured.Unstructured
	deleted bool
	// rv is the resource version the group is current at after it; ""
	// when unknown.
	rv string
	// err: the group cannot be followed.
	err error
}

// feed queues the updates of the WATCHes Snapshot started, without bound
// (Helm may apply for minutes with no one reading them), for the next
// follow to take.
type feed struct {
	mu     sync.Mutex
	queue  []update
	notify chan struct{}
}

func (f *feed) put(u update) {
	f.mu.Lock()
	f.queue = append(f.queue, u)
	f.mu.Unlock()
	select {
	case f.notify <- struct{}{}:
	default:
	}
}

func (f *feed) take() []update {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queue
	f.queue = nil
	return q
}

// applyFeed applies the updates queued: pods and claims to the views and
// pods, the objects followed to objs (recording, while Helm may not have
// applied yet, their baselines from the first LIST), and the groups that
// cannot be followed to failed.
func (w *Watcher) applyFeed(beforeApply bool) {
	for _, u := range w.feed.take() {
		k := u.group
		switch {
		case u.err != nil:
			w.failed[k] = u.err
		case k.gvr == live.PodsGVR || k.gvr == live.ClaimsGVR:
			w.applyPodUpdate(u, beforeApply)
		case u.listed:
			w.objs[k] = u.list
			if beforeApply {
				w.baselines(k, u.list)
			}
		case u.obj != nil:
			if w.objs[k] == nil {
				w.objs[k] = map[string]*unstructured.Unstructured{}
			}
			if u.deleted {
				delete(w.objs[k], u.obj.GetName())
			} else {
				w.objs[k][u.obj.GetName()] = u.obj
			}
		}
	}
}

// objectsOf are the objects of group k as last seen, by name: pods and
// claims (a chart's own claims and pods too) from their views, which
// Snapshot's LIST and the WATCH from it keep, the others from objs.
func (w *Watcher) objectsOf(k groupKey) map[string]*unstructured.Unstructured {
	if k.gvr == live.PodsGVR || k.gvr == live.ClaimsGVR {
		if v := w.views[k]; v != nil {
			return v.objs
		}
		return nil
	}
	return w.objs[k]
}

// pending is how many groups followed have not been LISTed yet (nor
// found unfollowable).
func (w *Watcher) pending() int {
	n := 0
	for k := range w.following {
		listed := w.objs[k] != nil
		if k.gvr == live.PodsGVR || k.gvr == live.ClaimsGVR {
			listed = w.views[k] != nil
		}
		if !listed && w.failed[k] == nil {
			n++
		}
	}
	return n
}

// applyPodUpdate applies an update of pods or claims to the views (and
// pods), recording, while Helm may not have applied yet, the baselines of
// the claims and pods followed from the first LIST.
func (w *Watcher) applyPodUpdate(u update, beforeApply bool) {
	v := w.views[u.group]
	if v == nil {
		v = &view{objs: map[string]*unstructured.Unstructured{}}
		w.views[u.group] = v
	}
	if u.rv != "" {
		v.rv = u.rv
	}
	switch {
	case u.listed:
		v.objs = u.list
		if u.group.gvr == live.PodsGVR {
			w.pods[u.group.ns] = toPods(u.list)
		}
		if beforeApply {
			w.baselines(u.group, u.list)
		}
	case u.obj != nil:
		name := u.obj.GetName()
		if u.deleted {
			delete(v.objs, name)
		} else {
			v.objs[name] = u.obj
		}
		if u.group.gvr == live.PodsGVR {
			if w.pods[u.group.ns] == nil {
				w.pods[u.group.ns] = map[string]*corev1.Pod{}
			}
			if p, err := toPod(u.obj); err == nil && !u.deleted {
				w.pods[u.group.ns][name] = p
			} else {
				delete(w.pods[u.group.ns], name)
			}
		}
	}
}

func toPod(o *unstructured.Unstructured) (*corev1.Pod, error) {
	p := &corev1.Pod{}
	return p, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, p)
}

// toPods are the pods of objs that can be read as pods, by name.
func toPods(objs map[string]*unstructured.Unstructured) map[string]*corev1.Pod {
	out := make(map[string]*corev1.Pod, len(objs))
	for name, o := range objs {
		if p, err := toPod(o); err == nil {
			out[name] = p
		}
	}
	return out
}

// uids are the UIDs of objs by name, those being deleted left out.
func uids(objs map[string]*unstructured.Unstructured) map[string]types.UID {
	out := make(map[string]types.UID, len(objs))
	for name, o := range objs {
		if o.GetDeletionTimestamp() == nil {
			out[name] = o.GetUID()
		}
	}
	return out
}
