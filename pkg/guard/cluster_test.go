package guard

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/clusterfake"
)

var (
	policyGVR  = PolicyGVK.GroupVersion().WithResource("validatingadmissionpolicies")
	bindingGVR = BindingGVK.GroupVersion().WithResource("validatingadmissionpolicybindings")
)

func object(gvk schema.GroupVersionKind, name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

// fakeCluster serves the policies (or not) and holds objs; it returns the
// client, to read the actions sent.
func fakeCluster(served bool, objs ...runtime.Object) (clusterfake.Resources, *dynamicfake.FakeDynamicClient) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		policyGVR: "ValidatingAdmissionPolicyList", bindingGVR: "ValidatingAdmissionPolicyBindingList",
	}, objs...)
	r := clusterfake.Resources{Dynamic: dyn}
	if served {
		r.Served = map[schema.GroupVersionKind]schema.GroupVersionResource{PolicyGVK: policyGVR, BindingGVK: bindingGVR}
	}
	return r, dyn
}

func writes(dyn *dynamicfake.FakeDynamicClient) []string {
	var out []string
	for _, a := range dyn.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

// TestInstallRefuses: a cluster without the policies (before 1.30), and a
// policy of the guard's name that is not the guard's, are refused with
// nothing written.
func TestInstallRefuses(t *testing.T) {
	tests := []struct {
		name   string
		served bool
		objs   []runtime.Object
		want   string
		is     error
	}{
		{"not served", false, nil, "Kubernetes 1.30 or later", ErrNotServed},
		{"someone else's policy", true, []runtime.Object{object(PolicyGVK, Name, map[string]string{"team": "ops"})}, "is not the guard's", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, dyn := fakeCluster(tt.served, tt.objs...)
			_, err := Install(context.Background(), r)
			if err == nil || !strings.Contains(err.Error(), tt.want) || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Fatalf("got %v, want an error saying %q", err, tt.want)
			}
			if w := writes(dyn); len(w) != 0 {
				t.Errorf("wrote %v", w)
			}
		})
	}
}

// TestUninstallRemovesOnlyTheGuards: objects without both of the guard's
// labels stay; each deletion is preconditioned on the UID read.
func TestUninstallRemovesOnlyTheGuards(t *testing.T) {
	objs, err := Objects()
	if err != nil {
		t.Fatal(err)
	}
	half := object(PolicyGVK, "half", map[string]string{managedByLabel: managedBy})
	other := object(BindingGVK, "other", nil)
	r, dyn := fakeCluster(true, objs[0], objs[1], half, other)
	lines, err := Uninstall(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ValidatingAdmissionPolicyBinding " + Name + " deleted", "ValidatingAdmissionPolicy " + Name + " deleted"}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q, want %q", lines, want)
	}
	for _, a := range dyn.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok && d.GetName() != Name {
			t.Errorf("deleted %s", d.GetName())
		}
	}
	for _, gvrName := range []struct {
		gvr  schema.GroupVersionResource
		name string
	}{{policyGVR, "half"}, {bindingGVR, "other"}} {
		if _, err := dyn.Resource(gvrName.gvr).Get(context.Background(), gvrName.name, metav1.GetOptions{}); err != nil {
			t.Errorf("%s is gone: %v", gvrName.name, err)
		}
	}
	// Not installed: nothing to remove, no error.
	if lines, err := Uninstall(context.Background(), r); err != nil || len(lines) != 0 {
		t.Errorf("second uninstall: %q, %v", lines, err)
	}
}
