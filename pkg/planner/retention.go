package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// retention says what else a deletion takes with it, for the kinds of the
// one table of destructive kinds (d, the deleted object's row; the zero
// row for another kind) whose deletion reaches beyond the object: the
// claims of a StatefulSet whose persistentVolumeClaimRetentionPolicy.
// whenDeleted is Delete, the volume of a claim or the storage of a volume
// as their reclaim policy decides, a CRD's resources, a Namespace's claims.
func (p *Planner) retention(ctx context.Context, d classify.Destructive, id manifest.ObjectID, liveObj *unstructured.Unstructured) ([]plan.Reason, error) {
	switch d.Resource {
	case "statefulsets":
		return p.statefulSetClaims(ctx, id, liveObj)
	case "persistentvolumeclaims":
		claims, err := p.Cluster.Claims.Claims(ctx, id.Namespace, func(n string) bool { return n == id.Name })
		if err != nil {
			return nil, ignoreNoServer(err) // the deletion's own reason still says the data goes
		}
		for _, c := range claims {
			if c.Volume != "" {
				return []plan.Reason{{Path: "spec.volumeName", Source: plan.SourceServer, Message: volumeFate(c.Volume, c.Size, c.ReclaimPolicy)}}, nil
			}
		}
	case "customresourcedefinitions":
		// Deleting the CRD deletes every resource of its kind: how many.
		var crd apiextv1.CustomResourceDefinition
		if runtime.DefaultUnstructuredConverter.FromUnstructured(liveObj.Object, &crd) == nil {
			return []plan.Reason{p.countResources(ctx, &crd)}, nil
		}
	case "namespaces":
		return p.namespaceClaims(ctx, id.Name)
	case "persistentvolumes":
		policy, _, _ := unstructured.NestedString(liveObj.Object, "spec", "persistentVolumeReclaimPolicy")
		size, _, _ := unstructured.NestedString(liveObj.Object, "spec", "capacity", "storage")
		return []plan.Reason{{Path: "spec.persistentVolumeReclaimPolicy", Source: plan.SourceServer, Message: volumeFate(id.Name, size, policy)}}, nil
	}
	return nil, nil
}

// namespaceClaims says which claims a Namespace's deletion takes with it
// (the data it holds), and their volumes' fate.
func (p *Planner) namespaceClaims(ctx context.Context, ns string) ([]plan.Reason, error) {
	claims, err := p.Cluster.Claims.Claims(ctx, ns, func(string) bool { return true })
	switch {
	case errors.Is(err, live.ErrNoServer):
		return nil, nil
	case err != nil:
		return []plan.Reason{{Path: "metadata.name", Source: plan.SourceServer, Message: "its PersistentVolumeClaims could not be listed: " + err.Error()}}, nil
	case len(claims) == 0:
		return []plan.Reason{{Path: "metadata.name", Source: plan.SourceServer, Message: "it holds no PersistentVolumeClaim now"}}, nil
	}
	return []plan.Reason{{Path: "metadata.name", Source: plan.SourceServer,
		Message: fmt.Sprintf("it holds %d PersistentVolumeClaim(s), deleted with it: %s", len(claims), claimList(claims))}}, nil
}

// claimList names claims with their sizes, volumes and reclaim policies.
func claimList(claims []Claim) string {
	names := make([]string, 0, len(claims))
	for _, c := range claims {
		n := c.Name
		if c.Size != "" {
			n += " " + c.Size
		}
		if c.Volume != "" {
			n += " (volume " + c.Volume
			if c.ReclaimPolicy != "" {
				n += ", reclaimPolicy " + c.ReclaimPolicy
			}
			n += ")"
		}
		names = append(names, n)
	}
	return strings.Join(names, ", ")
}

// ClaimSize is the storage a PersistentVolumeClaim holds: its capacity
// once bound, else what it requests; "" when neither is set.
func ClaimSize(claim *unstructured.Unstructured) string {
	for _, path := range [][]string{{"status", "capacity", "storage"}, {"spec", "resources", "requests", "storage"}} {
		if v, ok, _ := unstructured.NestedString(claim.Object, path...); ok && v != "" {
			return v
		}
	}
	return ""
}

// volumeFate says what becomes of a volume of size (when known) once its
// claim or itself goes.
func volumeFate(volume, size, policy string) string {
	if size != "" {
		volume += " (" + size + ")"
	}
	switch policy {
	case "Delete":
		return fmt.Sprintf("PersistentVolume %s has reclaimPolicy Delete: its storage and data are deleted", volume)
	case "Retain":
		return fmt.Sprintf("PersistentVolume %s has reclaimPolicy Retain: the storage is kept but released; reattaching it needs manual steps", volume)
	case "":
		return fmt.Sprintf("PersistentVolume %s: reclaim policy unknown", volume)
	}
	return fmt.Sprintf("PersistentVolume %s has reclaimPolicy %s", volume, policy)
}

// claimRetentionPath is the reason path of the claims a StatefulSet's
// deletion takes with it.
const claimRetentionPath = "spec.persistentVolumeClaimRetentionPolicy.whenDeleted"

// statefulSetClaims: with whenDeleted: Delete the StatefulSet controller
// deletes the claims of its volumeClaimTemplates with it.
func (p *Planner) statefulSetClaims(ctx context.Context, id manifest.ObjectID, sts *unstructured.Unstructured) ([]plan.Reason, error) {
	policy, _, _ := unstructured.NestedString(sts.Object, "spec", "persistentVolumeClaimRetentionPolicy", "whenDeleted")
	if policy != "Delete" {
		return nil, nil
	}
	templates := live.ClaimTemplates(sts)
	if len(templates) == 0 {
		return nil, nil
	}
	match := func(name string) bool { _, ok := live.ClaimTemplate(name, id.Name, templates); return ok }
	reason := plan.Reason{Path: claimRetentionPath, Source: plan.SourceServer}
	claims, err := p.Cluster.Claims.Claims(ctx, id.Namespace, match)
	if errors.Is(err, live.ErrNoServer) {
		reason.Source = plan.SourceCatalogue
		reason.Message = "whenDeleted: Delete: the StatefulSet's PersistentVolumeClaims are deleted with it (" + strings.Join(expectedClaims(sts, id.Name, templates), ", ") + ")"
		return []plan.Reason{reason}, nil
	}
	if err != nil {
		// Not being allowed to list claims must not stop the plan.
		reason.Message = "whenDeleted: Delete: the StatefulSet's PersistentVolumeClaims are deleted with it (they could not be listed: " + err.Error() + ")"
		return []plan.Reason{reason}, nil
	}
	if len(claims) == 0 {
		reason.Message = "whenDeleted: Delete: the StatefulSet's PersistentVolumeClaims would be deleted with it; none exists now"
		return []plan.Reason{reason}, nil
	}
	reason.Message = fmt.Sprintf("whenDeleted: Delete: its %d PersistentVolumeClaim(s) are deleted with it, and their data where the volume's reclaimPolicy is Delete: %s", len(claims), claimList(claims))
	return []plan.Reason{reason}, nil
}

// expectedClaims names the claims a StatefulSet's spec implies, offline.
func expectedClaims(sts *unstructured.Unstructured, name string, templates []string) []string {
	replicas := intField(sts, 1, "spec", "replicas")
	start := intField(sts, 0, "spec", "ordinals", "start")
	var out []string
	for _, tpl := range templates {
		for i := start; i < start+replicas; i++ {
			out = append(out, live.ClaimName(tpl, name, i))
		}
	}
	return out
}

// intField reads an integer however the manifest was decoded (int64 or
// float64), def when absent.
func intField(obj *unstructured.Unstructured, def int64, path ...string) int64 {
	v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, path...)
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	case int:
		return int64(n)
	}
	return def
}

func ignoreNoServer(err error) error {
	if errors.Is(err, live.ErrNoServer) {
		return nil
	}
	return err
}
