package releasestate

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

// States are the recreate journals and Leases of the releases of a
// namespace (or of every namespace), each kind read with one LIST of the
// objects this tool labels, for a read of many releases (status -A) that
// would otherwise send two GETs per release. A kind whose LIST failed (a
// user who may get but not list) is read with a GET per release, as
// CheckJournal and ObserveLease read it.
type States struct {
	cluster *live.Cluster
	here    host
	// journals and leases by namespace and name; nil when the LIST failed.
	journals, leases map[[2]string]*unstructured.Unstructured
}

// ReadStates LISTs the journals and Leases of namespace ("" every
// namespace).
func ReadStates(ctx context.Context, cluster *live.Cluster, namespace string) *States {
	s := &States{cluster: cluster, here: thisHost()}
	s.journals = labelled(ctx, cluster, live.SecretsGVR, namespace)
	s.leases = labelled(ctx, cluster, live.LeasesGVR, namespace)
	return s
}

// labelled are the objects of gvr this tool labels in namespace by
// namespace and name, nil when they cannot be listed.
func labelled(ctx context.Context, cluster *live.Cluster, gvr schema.GroupVersionResource, namespace string) map[[2]string]*unstructured.Unstructured {
	items, err := cluster.Labelled(ctx, gvr, namespace, manifest.ManagedByLabel+"="+journalManagedBy)
	if err != nil {
		return nil
	}
	out := make(map[[2]string]*unstructured.Unstructured, len(items))
	for i := range items {
		out[[2]string{items[i].GetNamespace(), items[i].GetName()}] = &items[i]
	}
	return out
}

// CheckJournal is CheckJournal of release name in ns from the LIST.
func (s *States) CheckJournal(ctx context.Context, name, ns string) error {
	if s.journals == nil {
		return CheckJournal(ctx, s.cluster, name, ns)
	}
	obj, ok := s.journals[[2]string{ns, JournalName(name)}]
	if !ok {
		return nil
	}
	j, err := journalOf(obj)
	if err != nil {
		return fmt.Errorf("release %q in namespace %s: %w", name, ns, err)
	}
	return &JournalError{Name: name, Namespace: ns, Journal: j}
}

// ObserveLease is ObserveLease of release in ns without apply, from the
// LIST.
func (s *States) ObserveLease(ctx context.Context, release, ns string, now time.Time) (*LeaseObservation, error) {
	if s.leases == nil {
		return observeLease(ctx, s.cluster, release, ns, false, now, s.here)
	}
	var err error
	obj, ok := s.leases[[2]string{ns, LeaseName(release)}]
	if !ok {
		err = apierrors.NewNotFound(live.LeasesGVR.GroupResource(), LeaseName(release))
	}
	return leaseObservation(obj, err, release, ns, false, now, s.here)
}
