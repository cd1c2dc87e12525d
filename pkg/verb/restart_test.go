package verb

import (
	"errors"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apply"
)

func TestRestartFailed(t *testing.T) {
	for _, tc := range []struct {
		res  apply.RestartResult
		want string
	}{
		{apply.RestartResult{Restarted: []string{"Deployment/a"}, Failed: []string{"Deployment/b"}, Errors: []error{errors.New("patching Deployment.apps/demo/b: forbidden")}},
			`release "app" revision 2 was applied, but --restart-stale failed: restarted: Deployment/a; not restarted: Deployment/b (patching Deployment.apps/demo/b: forbidden); the running pods of those not restarted keep the old value until they restart`},
		{apply.RestartResult{Failed: []string{"Deployment/a", "Deployment/b"}, Errors: []error{errors.New("x"), errors.New("y")}},
			`release "app" revision 2 was applied, but --restart-stale failed: restarted: none; not restarted: Deployment/a, Deployment/b (x; y); the running pods of those not restarted keep the old value until they restart`},
	} {
		if got := restartFailed("app", 2, tc.res); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}
