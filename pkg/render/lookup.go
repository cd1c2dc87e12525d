package render

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
)

// baseCluster answers the templates' `lookup` offline with the objects of
// the base release, as the cluster would after installing it (in their
// server form, with the metadata Helm adds, and the release namespace). It
// is a read-only HTTP server on the loopback speaking just enough of the
// Kubernetes API for Helm's lookup: discovery of a group version, GET and
// LIST; a group version it does not know is served empty, so a lookup of a
// custom resource finds nothing rather than failing the render. Without it
// an upgrade render sees an empty cluster, and the charts
// that keep generated passwords through lookup ("you must provide your
// current passwords when upgrading") fail where the real upgrade passes.
type baseCluster struct {
	srv *httptest.Server
	// objects by path: /api/v1/namespaces/NS/RESOURCE/NAME or
	// /apis/G/V/RESOURCE/NAME for cluster-scoped ones.
	objects map[string]*unstructured.Unstructured
	// resources by group version: what discovery lists.
	resources map[string][]metav1.APIResource
}

// newBaseCluster serves the objects of a rendered manifest of release name
// in namespace.
func newBaseCluster(manifestText, name, namespace string) (*baseCluster, error) {
	b := &baseCluster{objects: map[string]*unstructured.Unstructured{}, resources: map[string][]metav1.APIResource{}}
	for gvk := range scheme.Scheme.AllKnownTypes() {
		b.addKind(gvk)
	}
	ns := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]interface{}{"name": namespace, "labels": map[string]interface{}{"kubernetes.io/metadata.name": namespace}},
		"status":   map[string]interface{}{"phase": "Active"}}}
	b.add(ns)
	set, err := manifest.Split("base release", manifestText, namespace, manifest.StaticScoper{})
	if err != nil {
		return nil, err
	}
	for _, o := range set.Objects() {
		obj := predict.ServerForm(o.Obj)
		manifest.SetHelmOwnership(obj, name, namespace)
		b.addKind(o.GVK)
		b.add(obj)
	}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	return b, nil
}

func (b *baseCluster) Close() { b.srv.Close() }

// namespaced tells the scope of a kind as the plan does offline.
func namespaced(gvk schema.GroupVersionKind) bool {
	ns, known, _ := manifest.StaticScoper{}.IsNamespaced(gvk)
	return ns || !known
}

func (b *baseCluster) addKind(gvk schema.GroupVersionKind) {
	if gvk.Version == "" || gvk.Version == runtimeInternal || strings.HasSuffix(gvk.Kind, "List") || strings.HasSuffix(gvk.Kind, "Options") {
		return
	}
	gv := gvk.GroupVersion().String()
	for _, r := range b.resources[gv] {
		if r.Kind == gvk.Kind {
			return
		}
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	b.resources[gv] = append(b.resources[gv], metav1.APIResource{Name: plural.Resource, Kind: gvk.Kind,
		Namespaced: namespaced(gvk), Verbs: metav1.Verbs{"get", "list"}})
}

const runtimeInternal = "__internal"

func prefix(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "/api/" + gv.Version
	}
	return "/apis/" + gv.Group + "/" + gv.Version
}

func (b *baseCluster) add(obj *unstructured.Unstructured) {
	gvk := obj.GroupVersionKind()
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	p := prefix(gvk.GroupVersion())
	if namespaced(gvk) {
		p += "/namespaces/" + obj.GetNamespace()
	}
	b.objects[p+"/"+plural.Resource+"/"+obj.GetName()] = obj
}

// serve answers discovery of one group version, GET of one object and LIST
// of a resource (in a namespace or across all). Everything else is 404.
func (b *baseCluster) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "read-only")
		return
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	gv, rest, ok := splitAPIPath(path)
	if !ok {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "not found")
		return
	}
	if rest == "" {
		writeJSON(w, &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: gv.String(), APIResources: b.resources[gv.String()]})
		return
	}
	if obj := b.objects[path]; obj != nil {
		writeJSON(w, obj.Object)
		return
	}
	// A list: [namespaces/NS/]RESOURCE.
	parts := strings.Split(rest, "/")
	ns, resource := "", parts[0]
	switch {
	case len(parts) == 3 && parts[0] == "namespaces":
		ns, resource = parts[1], parts[2]
	case len(parts) != 1:
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, resource+" not found")
		return
	}
	var kind string
	for _, res := range b.resources[gv.String()] {
		if res.Name == resource {
			kind = res.Kind
		}
	}
	if kind == "" {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
		return
	}
	items := []interface{}{}
	for p, obj := range b.objects {
		if obj.GroupVersionKind() == gv.WithKind(kind) && (ns == "" || obj.GetNamespace() == ns) && strings.HasPrefix(p, prefix(gv)) {
			items = append(items, obj.Object)
		}
	}
	writeJSON(w, map[string]interface{}{"apiVersion": gv.String(), "kind": kind + "List",
		"metadata": map[string]interface{}{"resourceVersion": "1"}, "items": items})
}

// splitAPIPath splits /api/v1/REST or /apis/G/V/REST.
func splitAPIPath(path string) (schema.GroupVersion, string, bool) {
	parts := strings.SplitN(strings.TrimPrefix(path, "/"), "/", 4)
	switch {
	case len(parts) >= 2 && parts[0] == "api" && parts[1] == "v1": // the core group has no other version
		rest := strings.Join(parts[2:], "/")
		return schema.GroupVersion{Version: parts[1]}, rest, true
	case len(parts) >= 3 && parts[0] == "apis":
		rest := ""
		if len(parts) == 4 {
			rest = parts[3]
		}
		return schema.GroupVersion{Group: parts[1], Version: parts[2]}, rest, true
	}
	return schema.GroupVersion{}, "", false
}

func writeJSON(w http.ResponseWriter, v interface{}) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg})
}

// getter is the RESTClientGetter Helm's engine takes the lookup's
// connection from.
func (b *baseCluster) getter() *baseGetter { return &baseGetter{cfg: &rest.Config{Host: b.srv.URL}} }

type baseGetter struct{ cfg *rest.Config }

func (g *baseGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.cfg), nil }

func (g *baseGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return nil, errors.New("offline: no discovery beyond lookup")
}

func (g *baseGetter) ToRESTMapper() (meta.RESTMapper, error) {
	return nil, errors.New("offline: no REST mapper beyond lookup")
}
