package live

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// CountResources counts the objects of gvr in all namespaces with one LIST
// of one item (the server's remainingItemCount says the rest), paging
// through the list only when the server does not count.
func (c *Cluster) CountResources(ctx context.Context, gvr schema.GroupVersionResource) (int64, error) {
	opts := metav1.ListOptions{Limit: 1}
	var n int64
	for {
		list, err := c.Dynamic.Resource(gvr).List(ctx, opts)
		if err != nil {
			return 0, fmt.Errorf("listing %s: %w", strings.TrimPrefix(gvr.GroupResource().String()+"/"+gvr.Version, "."), err)
		}
		n += int64(len(list.Items))
		if rest := list.GetRemainingItemCount(); rest != nil {
			return n + *rest, nil
		}
		if list.GetContinue() == "" {
			return n, nil
		}
		opts = metav1.ListOptions{Limit: 500, Continue: list.GetContinue()}
	}
}
