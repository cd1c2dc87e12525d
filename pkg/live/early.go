package live

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

// Early holds the LISTs a plan starts before it knows all its objects: the
// kinds and namespaces the last release names, read while Helm renders the
// new one. Prefetch takes a group's objects from it when the group it would
// LIST is one Early listed, and LISTs the others itself. The objects are
// held as their LIST sent them (see State.Decode).
//
// The objects are the same as a later LIST would give: a LIST is one
// consistent read of the kind in the namespace whenever it is sent, the plan
// reads the live state before it classifies anything either way, and
// nothing the plan does writes to the cluster. Only when the read happens
// moves (by the time a render takes), as it already varies between the
// objects a plan reads with GETs.
type Early struct {
	// lean: managedFields were cut from the objects as they arrived.
	lean     bool
	start    time.Time
	mu       sync.Mutex
	end      time.Time
	wg       sync.WaitGroup
	groups   map[groupKey]*earlyList
	requests atomic.Int64
}

type groupKey struct {
	gvk       schema.GroupVersionKind
	namespace string
}

// earlyList is one LIST's result: the objects Early was started for, and
// the names of every object of the kind in the namespace (an object not
// among them does not exist).
type earlyList struct {
	kept map[string]*listed
	seen map[string]bool
	err  error
}

// StartPrefetch starts, in the background, one paged LIST per kind and
// namespace holding at least minGroup of heads. Wait for it (Early.Wait)
// before reading its Requests; Prefetch waits for it itself.
//
// With lean, each object kept loses its metadata.managedFields as it
// arrives, as a client-side plan's Prefetch would (they are often half an
// object, and held through the render otherwise). Prefetch then hands out
// only objects its own lean drops them from too, and lists again a group
// whose lean keeps everything (a server-side apply plan).
func (c *Cluster) StartPrefetch(ctx context.Context, heads []manifest.Head, minGroup int, lean bool) *Early {
	byGroup := map[groupKey]map[string]bool{}
	for _, h := range heads {
		k := groupKey{h.GVK, h.Namespace}
		if byGroup[k] == nil {
			byGroup[k] = map[string]bool{}
		}
		byGroup[k][h.Name] = true
	}
	e := &Early{groups: map[groupKey]*earlyList{}, start: time.Now(), lean: lean}
	for k, names := range byGroup {
		if len(names) < minGroup {
			continue
		}
		l := &earlyList{}
		e.groups[k] = l
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			defer e.finished()
			l.kept, l.seen, l.err = c.listNames(ctx, k.gvk, k.namespace, names, lean, &e.requests)
		}()
	}
	return e
}

// Wait waits for the LISTs to finish.
func (e *Early) Wait() {
	if e != nil {
		e.wg.Wait()
	}
}

func (e *Early) finished() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.end = time.Now()
}

// Took is the time from the start to the end of the last LIST (after Wait).
func (e *Early) Took() time.Duration {
	if e == nil {
		return 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.end.IsZero() {
		return 0
	}
	return e.end.Sub(e.start)
}

// Requests is the number of LIST requests sent (after Wait: all of them).
func (e *Early) Requests() int64 {
	if e == nil {
		return 0
	}
	return e.requests.Load()
}

// Lists is the number of kinds and namespaces listed.
func (e *Early) Lists() int {
	if e == nil {
		return 0
	}
	return len(e.groups)
}

// states (called by one goroutine at a time) returns the states of members
// from the early LIST of k, to be decoded without managedFields where lean
// says, and false when k was not listed early or its LIST failed. Members
// the LIST saw but was not started for (objects the new render adds that
// exist already) are left out, for Get.
func (e *Early) states(k groupKey, members []*manifest.Object, lean Lean) (map[manifest.ObjectID]State, bool) {
	if e == nil {
		return nil, false
	}
	l := e.groups[k]
	if l == nil || e.lean && lean == nil {
		return nil, false
	}
	e.wg.Wait()
	if l.err != nil {
		return nil, false
	}
	states := make(map[manifest.ObjectID]State, len(members))
	for _, o := range members {
		switch obj := l.kept[o.ID.Name]; {
		case obj != nil && e.lean && !lean(o):
			// Its managedFields are wanted (an object without a
			// last-release form): left for Get.
		case obj != nil:
			delete(l.kept, o.ID.Name) // handed out once: the caller owns it
			states[o.ID] = obj.state(o, lean)
		case !l.seen[o.ID.Name]:
			states[o.ID] = State{} // absent: to be created
		}
	}
	return states, true
}

// listNames LISTs gvk in namespace page by page, keeping the objects named
// in names (without managedFields when lean) and the name of every object;
// each request is counted in requests.
func (c *Cluster) listNames(ctx context.Context, gvk schema.GroupVersionKind, namespace string, names map[string]bool, lean bool, requests *atomic.Int64) (map[string]*listed, map[string]bool, error) {
	kept := make(map[string]*listed, len(names))
	seen := map[string]bool{}
	keep := func(name string) bool {
		seen[name] = true
		return names[name]
	}
	err := c.pages(ctx, gvk, namespace, requests, keep, func(name string, l *listed) {
		if lean {
			l.json, l.lean = withoutManagedFields(l.json), true
		}
		kept[name] = l
	})
	if err != nil {
		return nil, nil, err
	}
	return kept, seen, nil
}
