package verb

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
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
	w := redact.Warnings(&errOut, san, predict.Collect)
	ctx := context.Background()
	w.HandleWarningHeaderWithContext(ctx, 299, "", "policy says: new-hook-value, old-hook-value")
	w.HandleWarningHeaderWithContext(ctx, 299, "", "policy says: new-hook-value, old-hook-value") // deduplicated
	got := errOut.String()
	if strings.Contains(got, "hook-value") || strings.Count(got, "Warning: policy says: (sensitive: hmac-sha256:") != 1 {
		t.Errorf("got %q", got)
	}

	// A dry-run the planner makes for one object: its unknown-field
	// warnings go to the plan (whose notes are sanitised), the rest is
	// printed as before.
	errOut.Reset()
	objCtx, collected := predict.WithWarnings(ctx)
	w.HandleWarningHeaderWithContext(objCtx, 299, "", `unknown field "spec.replica"`)
	w.HandleWarningHeaderWithContext(objCtx, 299, "", "policy says: hello")
	w.HandleWarningHeaderWithContext(ctx, 299, "", `unknown field "spec.other"`)
	if got := collected.Texts(); len(got) != 1 || got[0] != `unknown field "spec.replica"` {
		t.Errorf("collected %q, want the object's unknown-field warning", got)
	}
	if got := errOut.String(); strings.Contains(got, "spec.replica") || !strings.Contains(got, "policy says: hello") || !strings.Contains(got, "spec.other") {
		t.Errorf("printed %q, want every warning but the collected one", got)
	}
}
