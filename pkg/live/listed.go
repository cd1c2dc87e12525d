package live

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	sigsjson "sigs.k8s.io/json"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

// listed is one object of a LIST page as the server sent it. Items of a
// LIST carry no apiVersion or kind of their own: the page's come with them.
type listed struct {
	json             []byte
	apiVersion, kind string
	// id is set when the object is handed out (state); lean when its
	// managedFields are cut, and go when it is decoded.
	id   manifest.ObjectID
	lean bool
}

// state hands l out as o's live state, without managedFields if lean says
// so: they are cut from its text now (withoutManagedFields), and dropped
// again when it is decoded should the text hold them still.
func (l *listed) state(o *manifest.Object, lean Lean) State {
	wanted := lean != nil && lean(o)
	if wanted && !l.lean { // not cut as it arrived (Early)
		l.json = withoutManagedFields(l.json)
	}
	l.id, l.lean = o.ID, wanted
	return State{listed: l}
}

// Decode returns s with Obj decoded from what its LIST sent (the states of
// Get, and those decoded already, are returned as they are). The decoding
// is the dynamic client's: JSON into an unstructured map, integers kept as
// int64.
func (s State) Decode() State {
	l := s.listed
	if l == nil {
		return s
	}
	var content map[string]interface{}
	if err := utiljson.Unmarshal(l.json, &content); err != nil {
		return State{Err: fmt.Errorf("%s: decoding the object its LIST returned: %w", l.id, err)}
	}
	obj := &unstructured.Unstructured{Object: content}
	obj.SetAPIVersion(l.apiVersion)
	obj.SetKind(l.kind)
	if l.lean {
		unstructured.RemoveNestedField(obj.Object, "metadata", "managedFields")
	}
	return State{Obj: obj}
}

// Encoded returns the object of a state not decoded yet as its LIST sent
// it (ok false for the others).
func (s State) Encoded() (apiVersion, kind string, data []byte, ok bool) {
	if s.listed == nil {
		return "", "", nil, false
	}
	return s.listed.apiVersion, s.listed.kind, s.listed.json, true
}

// pages LISTs gvk in namespace page by page and hands each the objects whose
// names keep accepts (keep sees every name), encoded as the server sent
// them. Each request is counted in requests, if not nil.
func (c *Cluster) pages(ctx context.Context, gvk schema.GroupVersionKind, namespace string, requests *atomic.Int64, keep func(name string) bool, each func(name string, l *listed)) error {
	_, mapping, err := c.Resource(gvk, namespace)
	if err != nil {
		return err
	}
	cont := ""
	for {
		if requests != nil {
			requests.Add(1)
		}
		page, err := c.page(ctx, mapping, namespace, cont)
		if err != nil {
			return err
		}
		for _, item := range page.Items {
			var head itemHead
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts(item, &head); err != nil {
				return fmt.Errorf("listing %s: an item does not decode: %w", mapping.Resource.GroupResource(), err)
			}
			if keep(head.Metadata.Name) {
				each(head.Metadata.Name, &listed{json: item, apiVersion: page.APIVersion, kind: gvk.Kind})
			}
		}
		if cont = page.Metadata.Continue; cont == "" {
			return nil
		}
	}
}

// listPage is a LIST response with its items left encoded.
type listPage struct {
	APIVersion string `json:"apiVersion"`
	Metadata   struct {
		Continue string `json:"continue"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// itemHead is the part of an item a LIST keeps it by.
type itemHead struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

// page reads one LIST page of mapping's resource in namespace from
// continue token cont: the response's bytes through the REST client, so
// items are never decoded into maps that are dropped or encoded again.
// Without a REST client (fakes), through the dynamic client.
func (c *Cluster) page(ctx context.Context, mapping *meta.RESTMapping, namespace, cont string) (*listPage, error) {
	if c.REST == nil {
		return c.dynamicPage(ctx, mapping, namespace, cont)
	}
	gvr := mapping.Resource
	path := []string{"apis", gvr.Group, gvr.Version}
	if gvr.Group == "" {
		path = []string{"api", gvr.Version}
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace && namespace != "" {
		path = append(path, "namespaces", namespace) // "": every namespace
	}
	path = append(path, gvr.Resource)
	// JSON whatever the client prefers (CBOR may be enabled): the page is
	// split and its items decoded as JSON.
	req := c.REST.Get().AbsPath(path...).SetHeader("Accept", "application/json").Param("limit", strconv.Itoa(ListPage))
	if cont != "" {
		req = req.Param("continue", cont)
	}
	body, err := req.Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	page := &listPage{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(body, page); err != nil {
		return nil, fmt.Errorf("listing %s: the response does not decode: %w", gvr.GroupResource(), err)
	}
	return page, nil
}

// dynamicPage is page through the dynamic client: its decoded items are
// encoded again, so both ways hand out the same form.
func (c *Cluster) dynamicPage(ctx context.Context, mapping *meta.RESTMapping, namespace, cont string) (*listPage, error) {
	ri := c.Dynamic.Resource(mapping.Resource)
	var list *unstructured.UnstructuredList
	var err error
	opts := metav1.ListOptions{Limit: ListPage, Continue: cont}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		list, err = ri.Namespace(namespace).List(ctx, opts)
	} else {
		list, err = ri.List(ctx, opts)
	}
	if err != nil {
		return nil, err
	}
	page := &listPage{APIVersion: list.GetAPIVersion()}
	page.Metadata.Continue = list.GetContinue()
	for _, item := range list.Items {
		data, err := json.Marshal(item.Object)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", mapping.Resource.GroupResource(), err)
		}
		page.Items = append(page.Items, data)
	}
	return page, nil
}
