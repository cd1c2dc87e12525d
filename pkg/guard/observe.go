package guard

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// InForce reads whether the guard is in force in the cluster: its policy
// and its binding both there and the guard's (installed by guard install,
// or applied from its --dry-run output). Two GETs, no write. A cluster that
// does not serve the policies has no guard; an error the caller cannot
// tell from an absent guard (forbidden, unreachable) is returned, matched
// by apierrors.IsForbidden when RBAC hides the policies.
func InForce(ctx context.Context, r Resources) (bool, error) {
	res, err := clients(r)
	if err != nil {
		return false, nil
	}
	for _, k := range []struct {
		res  dynamic.ResourceInterface
		kind string
	}{{res[0], PolicyGVK.Kind}, {res[1], BindingGVK.Kind}} {
		obj, err := k.res.Get(ctx, Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("reading the guard's %s %s: %w", k.kind, Name, err)
		case !ours(obj):
			return false, nil
		}
	}
	return true, nil
}
