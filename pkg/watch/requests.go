package watch

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// requestCount counts LISTs and WATCHes per resource, from the goroutines
// that follow the groups.
type requestCount struct {
	mu    sync.Mutex
	count map[string]*[2]int // resource → LISTs, WATCHes
}

func (r *requestCount) add(gvr schema.GroupVersionResource, watch bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.count == nil {
		r.count = map[string]*[2]int{}
	}
	name := gvr.GroupResource().String()
	if r.count[name] == nil {
		r.count[name] = &[2]int{}
	}
	if watch {
		r.count[name][1]++
	} else {
		r.count[name][0]++
	}
}

// String says how many LISTs and WATCHes were sent, per resource:
// "configmaps 1 LIST + 1 WATCH, pods 1 LIST + 1 WATCH".
func (r *requestCount) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.count))
	for n := range r.count {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		c := r.count[n]
		parts[i] = fmt.Sprintf("%s %d LIST + %d WATCH", n, c[0], c[1])
	}
	return strings.Join(parts, ", ")
}

// Requests says how many LISTs and WATCHes the watch sent so far, per
// resource, Snapshot's included (see requestCount.String): what its cost
// is measured by.
func (w *Watcher) Requests() string { return w.requests.String() }
