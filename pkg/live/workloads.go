package live

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// EachObject LISTs gvk in namespace, page by page (ListPage objects at
// most held encoded at once), and hands each object to each, decoded
// without managedFields; an object is garbage once each returns.
func (c *Cluster) EachObject(ctx context.Context, gvk schema.GroupVersionKind, namespace string, each func(*unstructured.Unstructured)) error {
	var bad error
	err := c.pages(ctx, gvk, namespace, nil, func(string) bool { return bad == nil }, func(_ string, l *listed) {
		l.lean = true
		st := State{listed: l}.Decode()
		if st.Err != nil {
			bad = st.Err
			return
		}
		each(st.Obj)
	})
	if err != nil {
		return err
	}
	return bad
}
