package live

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The resources read below, defined once for the packages that read or
// write them.
var (
	PodsGVR           = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	ClaimsGVR         = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	VolumesGVR        = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}
	StorageClassesGVR = schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}
	BudgetsGVR        = schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}
	NamespacesGVR     = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	SecretsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	EventsGVR         = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	LeasesGVR         = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
)

// Namespace returns the Namespace called name: the release's, or
// kube-system, whose UID names the cluster.
func (c *Cluster) Namespace(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	return c.Dynamic.Resource(NamespacesGVR).Get(ctx, name, metav1.GetOptions{})
}

// ClaimName is the name the StatefulSet controller gives the claim of
// claim template tmpl for the pod of StatefulSet set with ordinal:
// TEMPLATE-SET-ORDINAL.
func ClaimName(tmpl, set string, ordinal int64) string {
	return fmt.Sprintf("%s-%s-%d", tmpl, set, ordinal)
}

// ClaimTemplate reads ClaimName backwards: which of templates the claim
// called name was created from for StatefulSet set; false when none.
func ClaimTemplate(name, set string, templates []string) (string, bool) {
	for _, tmpl := range templates {
		rest, ok := strings.CutPrefix(name, tmpl+"-"+set+"-")
		if !ok || rest == "" {
			continue
		}
		if strings.Trim(rest, "0123456789") == "" {
			return tmpl, true
		}
	}
	return "", false
}

// ClaimTemplates names the claim templates of StatefulSet sts, in order.
func ClaimTemplates(sts *unstructured.Unstructured) []string {
	items, _, _ := unstructured.NestedSlice(sts.Object, "spec", "volumeClaimTemplates")
	var names []string
	for _, it := range items {
		if m, ok := it.(map[string]interface{}); ok {
			if n, _, _ := unstructured.NestedString(m, "metadata", "name"); n != "" {
				names = append(names, n)
			}
		}
	}
	return names
}

// Claims returns the PersistentVolumeClaims of namespace whose names match.
func (c *Cluster) Claims(ctx context.Context, namespace string, match func(name string) bool) ([]unstructured.Unstructured, error) {
	list, err := c.Dynamic.Resource(ClaimsGVR).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []unstructured.Unstructured
	for _, item := range list.Items {
		if match(item.GetName()) {
			out = append(out, item)
		}
	}
	return out, nil
}

// Volume returns the PersistentVolume called name.
func (c *Cluster) Volume(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	return c.Dynamic.Resource(VolumesGVR).Get(ctx, name, metav1.GetOptions{})
}

// StorageClass returns the StorageClass called name.
func (c *Cluster) StorageClass(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	return c.Dynamic.Resource(StorageClassesGVR).Get(ctx, name, metav1.GetOptions{})
}

// Pods returns the pods of namespace that sel selects.
func (c *Cluster) Pods(ctx context.Context, namespace string, sel labels.Selector) ([]unstructured.Unstructured, error) {
	list, err := c.Dynamic.Resource(PodsGVR).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// Budget is a PodDisruptionBudget as the rollout notes need it.
type Budget struct {
	Name     string
	Selector labels.Selector
	// DisruptionsAllowed is status.disruptionsAllowed now.
	DisruptionsAllowed int64
}

// Budgets returns the PodDisruptionBudgets of namespace; one whose selector
// cannot be read is left out.
func (c *Cluster) Budgets(ctx context.Context, namespace string) ([]Budget, error) {
	list, err := c.Dynamic.Resource(BudgetsGVR).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing PodDisruptionBudgets in %s: %w", namespace, err)
	}
	var out []Budget
	for _, item := range list.Items {
		var ls metav1.LabelSelector
		if m, ok, _ := unstructured.NestedMap(item.Object, "spec", "selector"); ok {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
				continue
			}
		}
		sel, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			continue
		}
		allowed, _, _ := unstructured.NestedInt64(item.Object, "status", "disruptionsAllowed")
		out = append(out, Budget{Name: item.GetName(), Selector: sel, DisruptionsAllowed: allowed})
	}
	return out, nil
}
