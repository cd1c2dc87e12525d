package restart

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// TestApply: each workload is patched as kubectl rollout restart does,
// under Manager; one whose patch is refused does not stop the
// others, and the result says which were restarted and which not.
func TestApply(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	gvr := gvk.GroupVersion().WithResource("deployments")
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(gvk, meta.RESTScopeNamespace)
	var objs []runtime.Object
	var restarts []*plan.Change
	for _, name := range []string{"a", "b", "c"} {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		u.SetNamespace("demo")
		u.SetName(name)
		objs = append(objs, u)
		restarts = append(restarts, &plan.Change{ID: manifest.ObjectID{Group: "apps", Kind: "Deployment", Namespace: "demo", Name: name}, APIVersion: "apps/v1"})
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "DeploymentList"}, objs...)
	var managers []string
	client.PrependReactor("patch", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		p := a.(clienttesting.PatchActionImpl)
		managers = append(managers, p.PatchOptions.FieldManager)
		if p.PatchType != types.MergePatchType {
			t.Errorf("patch type %s, want a merge patch", p.PatchType)
		}
		if p.Name == "b" {
			return true, nil, apierrors.NewForbidden(gvr.GroupResource(), "b", nil)
		}
		return false, nil, nil
	})
	now := time.Date(2026, 12, 3, 11, 0, 0, 0, time.UTC)
	res := Apply(context.Background(), &live.Cluster{Dynamic: client, Mapper: mapper}, restarts, now)
	if !slices.Equal(res.Restarted, []string{"Deployment/a", "Deployment/c"}) || !slices.Equal(res.Failed, []string{"Deployment/b"}) ||
		len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Error(), "patching Deployment.apps/demo/b") {
		t.Errorf("restarted %v, failed %v (%v); want a and c restarted, b failed and named", res.Restarted, res.Failed, res.Errors)
	}
	if !slices.Equal(managers, []string{Manager, Manager, Manager}) {
		t.Errorf("field managers %v, want %s for each", managers, Manager)
	}
	for name, want := range map[string]string{"a": "2026-12-03T11:00:00Z", "b": "", "c": "2026-12-03T11:00:00Z"} {
		u, err := client.Resource(gvr).Namespace("demo").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, _, _ := unstructured.NestedString(u.Object, "spec", "template", "metadata", "annotations", plan.RestartedAtAnnotation)
		if got != want {
			t.Errorf("Deployment/%s: restartedAt %q, want %q", name, got, want)
		}
	}
}

func TestFailure(t *testing.T) {
	for _, tc := range []struct {
		res  Result
		want string
	}{
		{Result{Restarted: []string{"Deployment/a"}, Failed: []string{"Deployment/b"}, Errors: []error{errors.New("patching Deployment.apps/demo/b: forbidden")}},
			`release "app" revision 2 was applied, but --restart-stale failed: restarted: Deployment/a; not restarted: Deployment/b (patching Deployment.apps/demo/b: forbidden); the running pods of those not restarted keep the old value until they restart`},
		{Result{Failed: []string{"Deployment/a", "Deployment/b"}, Errors: []error{errors.New("x"), errors.New("y")}},
			`release "app" revision 2 was applied, but --restart-stale failed: restarted: none; not restarted: Deployment/a, Deployment/b (x; y); the running pods of those not restarted keep the old value until they restart`},
		{Result{Restarted: []string{"Deployment/a"}}, ""},
	} {
		if got := tc.res.Failure("app", 2); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}
