package verb

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gitops"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// argoManagedNamespace is the Namespace Argo CD creates for an
// Application with CreateNamespace=true, as argo-cd's syncNamespace
// (controller/sync_namespace.go) and gitops-engine's autoCreateNamespace
// (pkg/sync/sync_context.go) build it: its name alone, untracked; with
// spec.syncPolicy.managedNamespaceMetadata, its labels and annotations and
// the sync option ServerSideApply=true. managed reports the latter.
func argoManagedNamespace(app *gitops.Doc, ns string) (obj *unstructured.Unstructured, managed bool) {
	obj = &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]interface{}{"name": ns}}}
	if app == nil {
		return obj, false
	}
	md, ok, _ := unstructured.NestedMap(app.Object, "spec", "syncPolicy", "managedNamespaceMetadata")
	if !ok || md == nil {
		return obj, false
	}
	labels, _, _ := unstructured.NestedStringMap(md, "labels")
	annotations, _, _ := unstructured.NestedStringMap(md, "annotations")
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[argoSyncOptions] = "ServerSideApply=true"
	if len(labels) > 0 {
		obj.SetLabels(labels)
	}
	obj.SetAnnotations(annotations)
	return obj, true
}

// argoNamespace adds to p what Argo CD's sync does about the destination
// namespace ns of the Application app when the head does not render it:
// with CreateNamespace=true a missing one is created first (a create in
// the plan); without, the sync fails on it (a blocker). A user who may not
// read namespaces gets a note.
func (c *Config) argoNamespace(ctx context.Context, p *plan.Plan, app *gitops.Doc, ns string, sync argoSync, rendered bool) error {
	if rendered {
		return nil // gitops-engine creates none when the render holds it
	}
	_, err := c.Cluster.Namespace(ctx, ns)
	obj, managed := argoManagedNamespace(app, ns)
	switch {
	case err == nil:
		if sync.CreateNamespace && managed {
			p.Notes = append(p.Notes, "managedNamespaceMetadata: Argo CD applies its labels and annotations to namespace "+ns+" server-side at each sync; not planned")
		}
		return nil
	case apierrors.IsForbidden(err):
		p.Notes = append(p.Notes, "--live: namespace "+ns+" could not be read (forbidden): whether Argo CD must create it is not planned")
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading namespace %s (the Application's destination namespace): %w", ns, err)
	case !sync.CreateNamespace:
		p.Blockers = append(p.Blockers, fmt.Sprintf("namespace %q does not exist and the Application's syncOptions do not hold CreateNamespace=true: Argo CD's sync fails to create the objects in it; add CreateNamespace=true, or create the namespace first", ns))
		return nil
	}
	create := plan.Change{ID: manifest.ObjectID{Kind: "Namespace", Name: ns}, APIVersion: "v1", Action: plan.ActionCreate, After: obj,
		Notes: []string{"CreateNamespace=true: Argo CD creates the destination namespace before the sync's objects, without the Application's tracking (it is neither pruned nor shown as the Application's)"}}
	if managed {
		create.Notes = append(create.Notes, "managedNamespaceMetadata: its labels and annotations, applied server-side")
	}
	p.Changes = append([]plan.Change{create}, p.Changes...)
	p.Notes = append(p.Notes, "namespace "+ns+" does not exist: Argo CD creates it first (CreateNamespace=true); the server could not validate the objects created in it")
	return nil
}
