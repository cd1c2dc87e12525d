package predict

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// TestDryRunApply checks the request Helm 4 sends for an ssa release,
// dry-run: PATCH of the whole object as application/apply-patch+yaml, field
// manager helm, force as asked, strict validation, dryRun=All.
func TestDryRunApply(t *testing.T) {
	for _, force := range []bool{false, true} {
		var got *http.Request
		var body []byte
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got = r
			body, _ = io.ReadAll(r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		}))
		dyn, err := dynamic.NewForConfig(&rest.Config{Host: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]interface{}{"name": "r-cm", "namespace": "h4"},
			"data":     map[string]interface{}{"key": "a"},
		}}
		ri := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("h4")
		out, err := DryRunApply(context.Background(), ri, obj, force)
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got.Method != http.MethodPatch || got.URL.Path != "/api/v1/namespaces/h4/configmaps/r-cm" {
			t.Errorf("request %s %s", got.Method, got.URL.Path)
		}
		if ct := got.Header.Get("Content-Type"); ct != "application/apply-patch+yaml" {
			t.Errorf("content type %q", ct)
		}
		q := got.URL.Query()
		wantForce := map[bool]string{false: "false", true: "true"}[force]
		if q.Get("dryRun") != "All" || q.Get("fieldManager") != "helm" || q.Get("force") != wantForce || q.Get("fieldValidation") != "Strict" {
			t.Errorf("force=%v: query %v", force, q)
		}
		var sent map[string]interface{}
		if err := json.Unmarshal(body, &sent); err != nil || !reflect.DeepEqual(sent, obj.Object) {
			t.Errorf("sent %s (%v), want the whole object", body, err)
		}
		if out.GetName() != "r-cm" {
			t.Errorf("returned %v", out)
		}
	}
}

func TestConflicts(t *testing.T) {
	err := apierrors.NewApplyConflict([]metav1.StatusCause{
		{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "someone-else"`, Field: ".data.key"},
		{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl-edit" using v1 at 2026-11-30T10:00:00Z`, Field: `.spec.template.spec.containers[name="app"].image`},
		{Type: metav1.CauseTypeFieldValueInvalid, Message: "other", Field: ".x"},
	}, "Apply failed with 2 conflicts")
	want := []Conflict{
		{Path: ".data.key", Manager: "someone-else"},
		{Path: `.spec.template.spec.containers[name="app"].image`, Manager: "kubectl-edit"},
	}
	if got := Conflicts(err); !reflect.DeepEqual(got, want) {
		t.Errorf("Conflicts = %#v, want %#v", got, want)
	}
	if got := Conflicts(apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "x", nil)); got != nil {
		t.Errorf("resourceVersion conflict: %v", got)
	}
	if got := Conflicts(apierrors.NewBadRequest("x")); got != nil {
		t.Errorf("bad request: %v", got)
	}
}
