package live

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// Reader is what the rollout watch (pkg/watch) reads of the cluster: LISTs
// and WATCHes of one resource in one namespace ("" for a cluster-scoped
// one), and the end of a container's log. Cluster.Reader is the real one;
// unit tests use test/kit/clusterfake (its Reader).
type Reader interface {
	// Mapping is the resource serving gvk and whether it is namespaced.
	Mapping(gvk schema.GroupVersionKind) (gvr schema.GroupVersionResource, namespaced bool, err error)
	List(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
	Watch(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (watch.Interface, error)
	// PodLog is the last tail lines of a container's log, of its run
	// before the current one when previous. The kubelet answers it, not
	// the API server; an error when there is no REST client.
	PodLog(ctx context.Context, namespace, pod, container string, previous bool, tail int) (string, error)
}

// Reader returns the cluster's Reader.
func (c *Cluster) Reader() Reader { return clusterReader{c} }

type clusterReader struct{ c *Cluster }

func (r clusterReader) Mapping(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	mapping, err := r.c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		// The mapper is discovery's when the run connected: a kind whose
		// CRD the release has created since is asked of the server again.
		if gvr, namespaced, ok := r.discover(gvk); ok {
			return gvr, namespaced, nil
		}
		return schema.GroupVersionResource{}, false, &KindNotServedError{GVK: gvk, Err: err}
	}
	return mapping.Resource, mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// discover asks the API server (one GET of the group version's discovery
// document, bounded by the client's timeout) which resource serves gvk, a
// kind of an API group; ok is false when none does or it cannot tell.
func (r clusterReader) discover(gvk schema.GroupVersionKind) (gvr schema.GroupVersionResource, namespaced, ok bool) {
	if r.c.REST == nil || gvk.Group == "" {
		return gvr, false, false
	}
	raw, err := r.c.REST.Get().AbsPath("/apis", gvk.Group, gvk.Version).DoRaw(context.Background())
	if err != nil {
		return gvr, false, false
	}
	var list metav1.APIResourceList
	if json.Unmarshal(raw, &list) != nil {
		return gvr, false, false
	}
	for _, res := range list.APIResources {
		if res.Kind == gvk.Kind && !strings.Contains(res.Name, "/") { // not a subresource
			return gvk.GroupVersion().WithResource(res.Name), res.Namespaced, true
		}
	}
	return gvr, false, false
}

func (r clusterReader) List(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	return r.c.Dynamic.Resource(gvr).Namespace(namespace).List(ctx, opts)
}

func (r clusterReader) Watch(ctx context.Context, gvr schema.GroupVersionResource, namespace string, opts metav1.ListOptions) (watch.Interface, error) {
	return r.c.Dynamic.Resource(gvr).Namespace(namespace).Watch(ctx, opts)
}

func (r clusterReader) PodLog(ctx context.Context, namespace, pod, container string, previous bool, tail int) (string, error) {
	if r.c.REST == nil {
		return "", errors.New("no REST client to read logs with")
	}
	raw, err := r.c.REST.Get().AbsPath("/api/v1/namespaces", namespace, "pods", pod, "log").
		Param("container", container).Param("previous", strconv.FormatBool(previous)).
		Param("tailLines", strconv.Itoa(tail)).DoRaw(ctx)
	return string(raw), err
}
