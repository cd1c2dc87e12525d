package live

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Lookup reads the object of kind gvk called name in namespace ("" for a
// cluster-scoped kind); nil and no error when it does not exist. Other
// errors are the server's, unwrapped, for the caller to name the object.
func (c *Cluster) Lookup(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	ri, _, err := c.Resource(gvk, namespace)
	if err != nil {
		return nil, err
	}
	obj, err := ri.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}

// Secret reads the Secret called name in namespace (the recreate journal);
// the server's error as it is, NotFound included.
func (c *Cluster) Secret(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	return c.Dynamic.Resource(SecretsGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

// Lease reads the Lease called name in namespace (the apply lock); the
// server's error as it is, NotFound and Forbidden included.
func (c *Cluster) Lease(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	return c.Dynamic.Resource(LeasesGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

// Labelled LISTs the objects of gvr (Secrets, Leases) in namespace (""
// every namespace) that match selector, a page at a time: one request for
// what would be a GET per release. The server's error as it is.
func (c *Cluster) Labelled(ctx context.Context, gvr schema.GroupVersionResource, namespace, selector string) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	opts := metav1.ListOptions{LabelSelector: selector, Limit: ListPage}
	for {
		list, err := c.Dynamic.Resource(gvr).Namespace(namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, list.Items...)
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}
