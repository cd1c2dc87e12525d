package live

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

// pagedServer serves the ConfigMaps of namespace a as LIST pages of two
// items, as the API server does: items without apiVersion or kind, a
// continue token on every page but the last. It records the Accept header
// of each request.
func pagedServer(t *testing.T, items []*unstructured.Unstructured, accepts *[]string) *httptest.Server {
	t.Helper()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/namespaces/a/configmaps" || r.URL.Query().Get("limit") != "500" {
			http.Error(w, "unexpected request "+r.URL.String(), http.StatusBadRequest)
			return
		}
		*accepts = append(*accepts, r.Header.Get("Accept"))
		from := 0
		if c := r.URL.Query().Get("continue"); c != "" {
			_, _ = fmt.Sscanf(c, "from-%d", &from)
		}
		to := min(from+2, len(items))
		var page []map[string]interface{}
		for _, it := range items[from:to] {
			item := runtime.DeepCopyJSON(it.Object)
			delete(item, "apiVersion")
			delete(item, "kind")
			page = append(page, item)
		}
		meta := map[string]interface{}{"resourceVersion": "7"}
		if to < len(items) {
			meta["continue"] = fmt.Sprintf("from-%d", to)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMapList", "metadata": meta, "items": page})
	}))
}

// TestPrefetchRawPages: LISTs read as raw pages through the REST client
// hand out the states the dynamic client's LISTs give — the same objects,
// decoded the same way (integers as int64), managedFields dropped where
// lean says — over every page, with JSON asked for and objects not asked
// for left out.
func TestPrefetchRawPages(t *testing.T) {
	var live []runtime.Object
	var items []*unstructured.Unstructured
	var objs []*manifest.Object
	for i := range 9 {
		cm := liveConfigMap("a", fmt.Sprintf("a%d", i))
		cm.SetGeneration(int64(i + 1))
		items = append(items, cm)
		live = append(live, cm)
		if i != 4 {
			objs = append(objs, configMapObject("a", cm.GetName())) // a4: another release's
		}
	}
	objs = append(objs, configMapObject("a", "absent"))
	var accepts []string
	srv := pagedServer(t, items, &accepts)
	defer srv.Close()
	cfg := dynamic.ConfigFor(&rest.Config{Host: srv.URL})
	cfg.GroupVersion, cfg.APIPath = nil, "/unused"
	rc, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a1 := manifest.ObjectID{Kind: "ConfigMap", Namespace: "a", Name: "a1"}
	ctx := context.Background()
	for _, lean := range []Lean{nil, func(o *manifest.Object) bool { return o.ID != a1 }} {
		accepts = nil
		dynCluster, _ := configMapCluster(live...)
		want := decoded(dynCluster.Prefetch(ctx, objs, MinListGroup, lean, nil))
		raw := &Cluster{Dynamic: dynCluster.Dynamic, Mapper: dynCluster.Mapper, REST: rc}
		got := decoded(raw.Prefetch(ctx, objs, MinListGroup, lean, nil))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("lean %v: raw pages give\n%v\nwant\n%v", lean != nil, got, want)
		}
		if len(got) != len(objs) {
			t.Errorf("lean %v: %d states, want one for each of %d objects", lean != nil, len(got), len(objs))
		}
		if st := got[manifest.ObjectID{Kind: "ConfigMap", Namespace: "a", Name: "absent"}]; st.Obj != nil || st.Err != nil {
			t.Errorf("an object missing from the LIST: %+v, want absent", st)
		}
		if g := got[a1].Obj.GetGeneration(); g != 2 {
			t.Errorf("a1's generation decoded as %v", got[a1].Obj.Object["metadata"].(map[string]interface{})["generation"])
		}
		if len(accepts) != 5 {
			t.Errorf("%d pages read, want 5 (9 objects, 2 a page)", len(accepts))
		}
		for _, a := range accepts {
			if a != "application/json" {
				t.Errorf("Accept %q, want application/json", a)
			}
		}
	}
}

// TestDecodeRefusesBrokenItem: an item that does not decode is the
// object's error, naming it.
func TestDecodeRefusesBrokenItem(t *testing.T) {
	l := &listed{json: []byte(`{"metadata":`), apiVersion: "v1", kind: "ConfigMap"}
	st := l.state(configMapObject("a", "x"), nil).Decode()
	if st.Err == nil || st.Obj != nil {
		t.Fatalf("got %+v, want an error", st)
	}
	if id := configMapObject("a", "x").ID.String(); !strings.Contains(st.Err.Error(), id) {
		t.Errorf("error %q does not name %s", st.Err, id)
	}
}
