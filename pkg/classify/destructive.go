package classify

import "k8s.io/apimachinery/pkg/runtime/schema"

// Destructive is a kind whose deletion or recreation destroys what it holds
// (GUIDE §4): one row of the one table of them, which the planner (a
// deletion's reason, a volume's recreate-required change blocking for good)
// and the apply (the kinds it never deletes for recreation, and so never
// restores from a journal) read.
type Destructive struct {
	Kind schema.GroupKind
	// Resource is the kind's resource, as admission rules name it (the
	// guard's policy matches it).
	Resource string
	// Deleted is what deleting an object of the kind destroys.
	Deleted string
	// NeverRecreated, when set, is why the tool never deletes one for
	// recreation, and what to do instead.
	NeverRecreated string
	// DataLoss is true when deleting an object of the kind loses data that
	// re-creating it does not bring back (a volume's, the custom resources,
	// a namespace's contents); an uninstall blocks only on those.
	DataLoss bool
	// Migrate, for volumes, is why a recreate-required change can never be
	// acknowledged (the tool deletes no volume) and how to migrate instead.
	Migrate string
}

// neverDeleteVolume is why no volume is deleted for recreation, claim or
// PersistentVolume alike.
const neverDeleteVolume = "safe-upgrade never deletes a volume (its data would be lost or the claim left Terminating while a pod uses it); keep the old spec, or migrate the data to a new claim by hand"

// destructiveKinds is the table; read it through DestructiveKind.
var destructiveKinds = []Destructive{
	{Kind: schema.GroupKind{Kind: "PersistentVolumeClaim"}, Resource: "persistentvolumeclaims",
		Deleted:        "deleting a PersistentVolumeClaim deletes its volume's data (reclaimPolicy Delete)",
		DataLoss:       true,
		NeverRecreated: neverDeleteVolume,
		Migrate: "safe-upgrade never deletes a volume, so this claim cannot be recreated (a new claim binds a new, empty volume and the old one is released: with reclaimPolicy Delete its data is gone); " +
			"to migrate, keep the old spec in the chart, or create a claim under a new name with the new spec, copy the data, move the workload to it, then remove the old claim"},
	{Kind: schema.GroupKind{Kind: "PersistentVolume"}, Resource: "persistentvolumes",
		Deleted:        "deleting a PersistentVolume can delete the underlying storage",
		DataLoss:       true,
		NeverRecreated: neverDeleteVolume,
		Migrate: "safe-upgrade never deletes a volume, so this PersistentVolume cannot be recreated (the deletion releases its claim and, with reclaimPolicy Delete, the storage); " +
			"to migrate, set reclaimPolicy Retain, create a PersistentVolume under a new name with the new spec pointing at the same storage, rebind the claim to it, then remove the old one"},
	{Kind: schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, Resource: "customresourcedefinitions",
		Deleted:        "deleting a CRD deletes every custom resource of that kind",
		DataLoss:       true,
		NeverRecreated: "deleting a CustomResourceDefinition deletes every custom resource of its kind in the cluster; change the CRD in a way the API server accepts, or migrate its resources by hand"},
	{Kind: schema.GroupKind{Kind: "Namespace"}, Resource: "namespaces",
		Deleted:        "deleting a Namespace deletes everything in it",
		DataLoss:       true,
		NeverRecreated: "deleting a Namespace deletes everything inside it; change it in a way the API server accepts, or move its contents by hand"},
	// Its pods go (the default cascade stops them all at once); its claims
	// stay. A recreate deletes it with propagationPolicy=Orphan, so the
	// new StatefulSet adopts its pods and claims.
	{Kind: schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, Resource: "statefulsets",
		Deleted: "deleting a StatefulSet stops all its pods at once"},
}

// DestructiveKinds returns the table's rows, in order.
func DestructiveKinds() []Destructive {
	return append([]Destructive(nil), destructiveKinds...)
}

// DestructiveKind returns the row of gk in the table of destructive kinds,
// and whether it has one.
func DestructiveKind(gk schema.GroupKind) (Destructive, bool) {
	for _, d := range destructiveKinds {
		if d.Kind == gk {
			return d, true
		}
	}
	return Destructive{}, false
}
