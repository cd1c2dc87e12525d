package apply

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
)

// A journal Secret can be written by anyone allowed to write Secrets in the
// release namespace, so nothing it says is trusted: an entry is restored
// only when it is an object of the release's last deployed revision (read
// from Helm's release record, not from the journal), of a kind the tool
// recreates, in the release namespace, and agrees with that revision's
// manifest at every field the manifest sets. The recreate step checks the
// live objects the same way before it deletes them, so every journal it
// writes passes.

// neverRecreated says why the tool never deletes an object of kind gk for
// recreation, "" when it may.
func neverRecreated(gk schema.GroupKind) string {
	d, _ := classify.DestructiveKind(gk)
	return d.NeverRecreated
}

// checkRestorable says why obj, as stored (in a journal, or live before a
// recreate), may not be restored in release namespace ns: nil when it is an
// object of deployed (the last deployed revision's objects, of revision
// version) that the tool recreates, in ns, agreeing with deployed at every
// field the manifest sets.
func checkRestorable(obj *unstructured.Unstructured, ns string, deployed *manifest.Set, version int) error {
	gvk := obj.GroupVersionKind()
	id := manifest.ObjectID{Group: gvk.Group, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
	switch {
	case gvk.Kind == "" || gvk.Version == "" || obj.GetName() == "":
		return fmt.Errorf("it has no apiVersion, kind or name")
	case obj.GetNamespace() != ns:
		where := "namespace " + obj.GetNamespace()
		if obj.GetNamespace() == "" {
			where = "no namespace (cluster-scoped)"
		}
		return fmt.Errorf("it is in %s, not in the release namespace %s: safe-upgrade recreates and restores only objects of the release namespace", where, ns)
	}
	if why := neverRecreated(gvk.GroupKind()); why != "" {
		return fmt.Errorf("safe-upgrade never recreates a %s: %s", gvk.Kind, why)
	}
	want := deployed.Get(id)
	if want == nil {
		return fmt.Errorf("it is not an object of the release's deployed revision %d (not in its manifest)", version)
	}
	if got := want.Obj.GetAPIVersion(); got != obj.GetAPIVersion() {
		// Another version of the same kind is the same object, but a
		// field-by-field comparison across versions means nothing.
		return fmt.Errorf("it is %s, while the deployed revision %d has it as %s", obj.GetAPIVersion(), version, got)
	}
	if drift := classify.Drift(want.Obj, obj, nil, nil); len(drift) > 0 {
		var paths []string
		for _, d := range drift {
			paths = append(paths, d.Path)
		}
		return fmt.Errorf("it differs from the deployed revision %d at %s, which the chart sets", version, strings.Join(paths, ", "))
	}
	return nil
}

// keptFields names the fields of obj (as stored, with its field managers)
// that the deployed manifest object want does not set and that a manager
// other than Helm owns — an autoscaler's replicas, a sidecar injector's
// containers: a restore keeps them as they were, and says so.
func keptFields(obj *unstructured.Unstructured, want *unstructured.Unstructured) []string {
	owners := classify.Owners(obj, predict.FieldManager)
	var out []string
	for _, p := range owners.Paths() {
		meta := classify.Under(p, "metadata") && !classify.Under(p, "metadata.labels") && !classify.Under(p, "metadata.annotations")
		if meta || classify.Under(p, "status") || (want != nil && classify.Lookup(want.Object, p) != nil) {
			continue
		}
		out = append(out, fmt.Sprintf("%s (%s)", p, owners.Owner(p)))
	}
	sort.Strings(out)
	return out
}
