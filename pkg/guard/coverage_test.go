package guard

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/clusterfake"
)

// TestSurveyClaimOfUnlistedNamespace: a release's claim whose namespace
// the namespaces' LIST did not hold (made between the two LISTs) is
// counted, not a panic; a Terminating namespace's claim waits for its
// acknowledgement.
func TestSurveyClaimOfUnlistedNamespace(t *testing.T) {
	claim := func(ns, name string) *unstructured.Unstructured {
		c := object(claimsGVK, name, nil)
		c.SetNamespace(ns)
		c.SetUID(types.UID("uid-" + name))
		c.SetAnnotations(map[string]string{ReleaseAnnotation: "db"})
		return c
	}
	terminating := object(nsGVK, "going", nil)
	terminating.Object["status"] = map[string]any{"phase": "Terminating"}
	gvrs := map[schema.GroupVersionKind]schema.GroupVersionResource{
		claimsGVK: {Version: "v1", Resource: "persistentvolumeclaims"},
		volumeGVK: {Version: "v1", Resource: "persistentvolumes"},
		nsGVK:     {Version: "v1", Resource: "namespaces"},
		setGVK:    {Group: "apps", Version: "v1", Resource: "statefulsets"},
		crdGVK:    {Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
	}
	lists := map[schema.GroupVersionResource]string{}
	for gvk, gvr := range gvrs {
		lists[gvr] = gvk.Kind + "List"
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), lists, terminating, claim("new", "data"), claim("going", "files"))
	naming := ClaimNaming{Templates: func(*unstructured.Unstructured) []string { return nil }, FromTemplate: func(string, string, []string) (string, bool) { return "", false }}
	cov, err := Survey(context.Background(), clusterfake.Resources{Dynamic: dyn, Served: gvrs}, naming, false)
	if err != nil {
		t.Fatal(err)
	}
	if cov.Claims != 2 || cov.Namespaces != 2 {
		t.Fatalf("claims %d in %d namespaces, want 2 in 2", cov.Claims, cov.Namespaces)
	}
	if len(cov.Waiting) != 1 || cov.Waiting[0] != "kubectl annotate persistentvolumeclaims files -n going "+AckAnnotation+"=uid-files" {
		t.Fatalf("waiting %q, want the Terminating namespace's claim only", cov.Waiting)
	}
}
