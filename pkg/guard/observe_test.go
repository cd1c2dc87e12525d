package guard

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// TestInForce: the guard is in force only with its policy and its binding,
// both the guard's; a read RBAC forbids is an error the plan can tell.
func TestInForce(t *testing.T) {
	ours := labels()
	tests := []struct {
		name      string
		served    bool
		objs      []runtime.Object
		forbidden bool
		want      bool
	}{
		{"not served", false, nil, false, false},
		{"not installed", true, nil, false, false},
		{"policy without binding", true, []runtime.Object{object(PolicyGVK, Name, ours)}, false, false},
		{"someone else's", true, []runtime.Object{object(PolicyGVK, Name, nil), object(BindingGVK, Name, ours)}, false, false},
		{"installed", true, []runtime.Object{object(PolicyGVK, Name, ours), object(BindingGVK, Name, ours)}, false, true},
		{"forbidden", true, nil, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, dyn := fakeCluster(tt.served, tt.objs...)
			if tt.forbidden {
				dyn.PrependReactor("get", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(policyGVR.GroupResource(), Name, nil)
				})
			}
			got, err := InForce(context.Background(), r)
			if tt.forbidden != apierrors.IsForbidden(err) || (err != nil && !tt.forbidden) {
				t.Fatalf("error %v, want forbidden %v", err, tt.forbidden)
			}
			if got != tt.want {
				t.Errorf("in force %v, want %v", got, tt.want)
			}
			if w := writes(dyn); len(w) != 0 {
				t.Errorf("wrote %v", w)
			}
		})
	}
}
