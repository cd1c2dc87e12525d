package live

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

// Release is a release as its live objects are read (`status`): its
// revision compared with the cluster, that revision's manifest objects and
// its hooks' objects.
type Release struct {
	Name, Namespace string
	Revision        int
	Objects         *manifest.Set
	// Hooks are the objects of the revision's hooks: Helm creates them
	// when their event runs, so they are no strays of the release.
	Hooks map[manifest.ObjectID]bool
}

// ReadReleases LISTs every kind the releases' manifests hold, once: in the
// release namespace when every object is there, else in every namespace.
// It keeps the releases' objects and those that claim to belong to one.
func (c *Cluster) ReadReleases(ctx context.Context, rels []*Release, allNamespaces bool) *Inventory {
	wanted := map[manifest.ObjectID]bool{}
	seen := map[schema.GroupVersionKind]bool{}
	var kinds []schema.GroupVersionKind
	namespaces := map[string]bool{}
	for _, r := range rels {
		namespaces[r.Namespace] = true
		for _, o := range r.Objects.Objects() {
			wanted[o.ID] = true
			if o.ID.Namespace != "" {
				namespaces[o.ID.Namespace] = true
			}
			if !seen[o.GVK] {
				seen[o.GVK] = true
				kinds = append(kinds, o.GVK)
			}
		}
	}
	keep := func(m ItemMeta) bool {
		return wanted[m.ID] || slices.ContainsFunc(rels, func(r *Release) bool { return r.Claims(m) })
	}
	return c.ReadInventory(ctx, kinds, ListNamespace(namespaces, allNamespaces), DefaultConcurrency, keep)
}

// ListNamespace is the namespace one LIST of objects in namespaces reads:
// that namespace when they are all in one and allNamespaces is not asked,
// else "" (every namespace).
func ListNamespace(namespaces map[string]bool, allNamespaces bool) string {
	if len(namespaces) != 1 || allNamespaces {
		return ""
	}
	for n := range namespaces {
		return n
	}
	return ""
}

// Claims reports whether m, an object of the cluster, says it belongs to
// r's release without being one of its objects: Helm's ownership
// annotations naming the release, or the labels charts give every object
// (app.kubernetes.io/instance naming the release, managed-by Helm) in the
// release namespace. An object a controller owns (a ReplicaSet, a pod)
// and the release's hooks are no strays.
func (r *Release) Claims(m ItemMeta) bool {
	if m.Controlled || r.Hooks[m.ID] || r.Objects.Get(m.ID) != nil {
		return false
	}
	if owner, ok := m.Annotations[manifest.ReleaseNameAnnotation]; ok {
		ownerNS := m.Annotations[manifest.ReleaseNamespaceAnnotation]
		return owner == r.Name && (ownerNS == r.Namespace || ownerNS == "" && m.ID.Namespace == r.Namespace)
	}
	return m.Labels["app.kubernetes.io/instance"] == r.Name && m.Labels["app.kubernetes.io/managed-by"] == "Helm" && m.ID.Namespace == r.Namespace
}

// Stray is an object of the inventory that claims a release (Claims)
// without being in any release's manifest: Helm neither upgrades nor
// deletes it.
type Stray struct {
	ID         manifest.ObjectID
	APIVersion string
	// Note says why it is the release's, and what Helm does with it.
	Note string
}

// Strays returns, for each of rels (same order), the objects of inv that
// claim its release without being in any release's manifest; each item is
// decoded once, whatever the number of releases.
func Strays(inv *Inventory, rels []*Release) [][]Stray {
	out := make([][]Stray, len(rels))
	for _, id := range inv.IDs() {
		if slices.ContainsFunc(rels, func(r *Release) bool { return r.Objects.Get(id) != nil }) {
			continue
		}
		st := inv.State(id).Decode()
		if st.Obj == nil {
			continue
		}
		m := ItemMeta{ID: id, Labels: st.Obj.GetLabels(), Annotations: st.Obj.GetAnnotations()}
		how := "labels app.kubernetes.io/instance and app.kubernetes.io/managed-by: Helm name"
		if _, ok := m.Annotations[manifest.ReleaseNameAnnotation]; ok {
			how = "annotation " + manifest.ReleaseNameAnnotation + " names"
		}
		for i, r := range rels {
			if r.Claims(m) {
				out[i] = append(out[i], Stray{ID: id, APIVersion: st.Obj.GetAPIVersion(),
					Note: fmt.Sprintf("not in revision %d's manifest, but its %s the release: Helm neither upgrades nor deletes it", r.Revision, how)})
			}
		}
	}
	return out
}

// InventoryObjects answers the planner's Objects from an inventory: an
// object of a kind whose LIST failed is read with a GET.
type InventoryObjects struct {
	Inventory *Inventory
	Cluster   *Cluster
}

// Prefetch implements planner.Objects.
func (o InventoryObjects) Prefetch(_ context.Context, objs []*manifest.Object, _ Lean) map[manifest.ObjectID]State {
	out := make(map[manifest.ObjectID]State, len(objs))
	for _, obj := range objs {
		if o.Inventory.Failed(obj.GVK.GroupKind()) == nil {
			out[obj.ID] = o.Inventory.State(obj.ID)
		}
	}
	return out
}

// Get implements planner.Objects.
func (o InventoryObjects) Get(ctx context.Context, obj, _ *manifest.Object) State {
	return o.Cluster.Get(ctx, obj)
}

// Compared returns the reader of the two objects a drifted object's fields
// are compared in (classify.ObjectStatus calls it only for a drifted one:
// the live read may take a GET): stored, id's object in a release's
// manifest (loaded; nil when there is none or it does not decode), and the
// live one (from the inventory, or a GET when its kind's LIST failed; nil
// when not found).
func (o InventoryObjects) Compared(ctx context.Context, id manifest.ObjectID, stored *manifest.Object) func() (*unstructured.Unstructured, *unstructured.Unstructured) {
	return func() (*unstructured.Unstructured, *unstructured.Unstructured) {
		var storedObj, liveObj *unstructured.Unstructured
		if stored != nil && stored.Load() == nil {
			storedObj = stored.Obj
		}
		if o.Inventory.Failed(schema.GroupKind{Group: id.Group, Kind: id.Kind}) == nil {
			liveObj = o.Inventory.State(id).Decode().Obj
		} else if stored != nil {
			liveObj = o.Cluster.Get(ctx, stored).Obj
		}
		return storedObj, liveObj
	}
}
