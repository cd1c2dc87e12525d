package verb

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gitops"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// argoNamespace adds to p what Argo CD's sync does about the destination
// namespace ns of the Application app when the head does not render it:
// with CreateNamespace=true a missing one is created first (a create in
// the plan); without, the sync fails on it (a blocker). A user who may not
// read namespaces gets a note.
func (c *Config) argoNamespace(ctx context.Context, p *plan.Plan, app *gitops.Doc, ns string, sync gitops.ArgoSync, rendered bool) error {
	if rendered {
		return nil // gitops-engine creates none when the render holds it
	}
	_, err := c.Cluster.Namespace(ctx, ns)
	obj, managed := gitops.ArgoManagedNamespace(app, ns)
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
