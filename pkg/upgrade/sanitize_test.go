package upgrade

import (
	"bytes"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

func TestHookSecretsAndWarningsAreSanitised(t *testing.T) {
	hook := func(pw string) *release.Hook {
		return &release.Hook{Kind: "Secret", Name: "h", Manifest: "apiVersion: v1\nkind: Secret\nmetadata: {name: h}\nstringData: {pw: " + pw + "}\n"}
	}
	san := redact.NewSanitizer(redact.NewMasker())
	addHookSecrets(san, &render.Result{
		Next:     &release.Release{Hooks: []*release.Hook{nil, hook("new-hook-value")}},
		Previous: &release.Release{Hooks: []*release.Hook{hook("old-hook-value")}},
	})
	var errOut bytes.Buffer
	w := sanitizedWarnings(&errOut, san)
	w.HandleWarningHeader(299, "", "policy says: new-hook-value, old-hook-value")
	w.HandleWarningHeader(299, "", "policy says: new-hook-value, old-hook-value") // deduplicated
	got := errOut.String()
	if strings.Contains(got, "hook-value") || strings.Count(got, "Warning: policy says: (sensitive: hmac-sha256:") != 1 {
		t.Errorf("got %q", got)
	}
}
