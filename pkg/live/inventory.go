package live

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

// ItemMeta is what an Inventory keeps an item of a LIST by: its identity,
// labels and annotations, and whether a controller owns it (a pod of a
// ReplicaSet carries its workload's labels without being anyone's stray).
// Owned: it has any owner reference (Argo CD's cluster cache leaves such
// an object to its owner, controller or not).
type ItemMeta struct {
	ID          manifest.ObjectID
	Labels      map[string]string
	Annotations map[string]string
	Controlled  bool
	Owned       bool
}

// Inventory is the live objects of several releases read with one paged
// LIST per kind, whatever the number of releases (`status -A`): the items
// a keep function chose, as their LIST sent them. Each State hands out a
// fresh decoding, so one item can be handed out more than once.
type Inventory struct {
	items map[manifest.ObjectID]*listed
	// failed are the kinds whose LIST failed (RBAC may allow get but not
	// list): their objects are left for Get.
	failed map[schema.GroupKind]error
	// Requests is the number of LIST requests sent.
	Requests int
}

// ReadInventory LISTs each of kinds once in namespace ("" for every
// namespace; cluster-scoped kinds ignore it), at most concurrency LISTs at
// a time, and keeps the items keep chooses. A LIST that fails is recorded
// (Failed), not returned: the objects of its kind are then read one by one.
func (c *Cluster) ReadInventory(ctx context.Context, kinds []schema.GroupVersionKind, namespace string, concurrency int, keep func(ItemMeta) bool) *Inventory {
	inv := &Inventory{items: map[manifest.ObjectID]*listed{}, failed: map[schema.GroupKind]error{}}
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(max(concurrency, 1))
	for _, gvk := range kinds {
		g.Go(func() error {
			var requests int
			kept := map[manifest.ObjectID]*listed{}
			err := c.itemPages(ctx, gvk, namespace, &requests, func(m ItemMeta, l *listed) {
				if keep(m) {
					l.id = m.ID
					kept[m.ID] = l
				}
			})
			mu.Lock()
			defer mu.Unlock()
			inv.Requests += requests
			if err != nil {
				inv.failed[gvk.GroupKind()] = err
				return nil
			}
			for id, l := range kept {
				inv.items[id] = l
			}
			return nil
		})
	}
	_ = g.Wait() // failures are per kind
	return inv
}

// Failed returns the error of gk's LIST, nil when it was listed.
func (inv *Inventory) Failed(gk schema.GroupKind) error { return inv.failed[gk] }

// State returns id's live state from the LIST of its kind, still encoded
// (State.Decode): absent when that LIST did not hold it. Ask Failed first:
// an object of a kind whose LIST failed is not known to be absent.
func (inv *Inventory) State(id manifest.ObjectID) State {
	l := inv.items[id]
	if l == nil {
		return State{}
	}
	return State{listed: &listed{json: l.json, apiVersion: l.apiVersion, kind: l.kind, id: id}}
}

// IDs returns the identities of every item kept, sorted.
func (inv *Inventory) IDs() []manifest.ObjectID {
	out := make([]manifest.ObjectID, 0, len(inv.items))
	for id := range inv.items {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Less(out[j]) })
	return out
}

// itemMeta is the part of an item an Inventory keeps it by.
type itemMeta struct {
	Metadata struct {
		Name            string            `json:"name"`
		Namespace       string            `json:"namespace"`
		Labels          map[string]string `json:"labels"`
		Annotations     map[string]string `json:"annotations"`
		OwnerReferences []struct {
			Controller *bool `json:"controller"`
		} `json:"ownerReferences"`
	} `json:"metadata"`
}

// itemPages is pages for an Inventory: each item of gvk in namespace with
// its metadata.
func (c *Cluster) itemPages(ctx context.Context, gvk schema.GroupVersionKind, namespace string, requests *int, each func(ItemMeta, *listed)) error {
	_, mapping, err := c.Resource(gvk, namespace)
	if err != nil {
		return err
	}
	cont := ""
	for {
		*requests++
		page, err := c.page(ctx, mapping, namespace, cont)
		if err != nil {
			return fmt.Errorf("listing %s: %w", mapping.Resource.GroupResource(), err)
		}
		for _, item := range page.Items {
			var m itemMeta
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts(item, &m); err != nil {
				return fmt.Errorf("listing %s: an item does not decode: %w", mapping.Resource.GroupResource(), err)
			}
			meta := ItemMeta{ID: manifest.ObjectID{Group: gvk.Group, Kind: gvk.Kind, Namespace: m.Metadata.Namespace, Name: m.Metadata.Name},
				Labels: m.Metadata.Labels, Annotations: m.Metadata.Annotations, Owned: len(m.Metadata.OwnerReferences) > 0}
			for _, o := range m.Metadata.OwnerReferences {
				meta.Controlled = meta.Controlled || o.Controller != nil && *o.Controller
			}
			each(meta, &listed{json: item, apiVersion: page.APIVersion, kind: gvk.Kind})
		}
		if cont = page.Metadata.Continue; cont == "" {
			return nil
		}
	}
}
