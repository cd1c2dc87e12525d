package upgrade

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
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
	w := sanitizedWarnings(&errOut, san)
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

// roundTripFunc is an http.RoundTripper answering with a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestSecretReadsFeedTheSanitiser: a Secret read from the API server (a
// template's lookup) is known to the sanitiser before the caller sees it;
// Helm's release records, watches and other kinds are not read.
func TestSecretReadsFeedTheSanitiser(t *testing.T) {
	secret := func(pw string) string {
		return `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"pw":"` + base64.StdEncoding.EncodeToString([]byte(pw)) + `"}}`
	}
	tests := []struct {
		url, body string
		fed       bool
	}{
		{"/api/v1/namespaces/demo/secrets/creds", secret("looked-up-value-1"), true},
		{"/api/v1/namespaces/demo/secrets", `{"kind":"SecretList","items":[` + secret("listed-value-22") + `]}`, true},
		{"/k8s/clusters/c-1/api/v1/secrets", `{"kind":"SecretList","items":[` + secret("proxied-value-3") + `]}`, true},
		{"/api/v1/namespaces/demo/secrets/sh.helm.release.v1.app.v1", secret("release-record-4"), false},
		{"/api/v1/namespaces/demo/secrets?labelSelector=owner%3Dhelm%2Cname%3Dapp", secret("release-query-5"), false},
		{"/api/v1/namespaces/demo/secrets?watch=true", secret("watched-value-6"), false},
		{"/api/v1/namespaces/demo/configmaps/secrets", secret("configmap-value-7"), false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			san := redact.NewSanitizer(redact.NewMasker())
			rt := secretReads{san: san, next: roundTripFunc(func(*http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(strings.NewReader(tt.body))}, nil
			})}
			req := httptest.NewRequest(http.MethodGet, "https://server"+tt.url, nil)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if body, _ := io.ReadAll(resp.Body); string(body) != tt.body {
				t.Errorf("the caller got %q", body)
			}
			var value string
			for _, v := range []string{"looked-up-value-1", "listed-value-22", "proxied-value-3", "release-record-4", "release-query-5", "watched-value-6", "configmap-value-7"} {
				if strings.Contains(tt.body, base64.StdEncoding.EncodeToString([]byte(v))) {
					value = v
				}
			}
			if fed := san.String("said: "+value) != "said: "+value; fed != tt.fed {
				t.Errorf("sanitiser fed: %v, want %v", fed, tt.fed)
			}
		})
	}
}

// TestSanitisedReadsPassUntouched: a read whose caller hands its Secrets to
// the sanitiser itself (the planner's reads of the release's live objects)
// reaches the caller as the server sent it, and is not decoded again.
func TestSanitisedReadsPassUntouched(t *testing.T) {
	body := `{"kind":"SecretList","items":[{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"pw":"` +
		base64.StdEncoding.EncodeToString([]byte("planner-read-value")) + `"}}]}`
	san := redact.NewSanitizer(redact.NewMasker())
	sent := io.NopCloser(strings.NewReader(body))
	rt := secretReads{san: san, next: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: sent}, nil
	})}
	req := httptest.NewRequest(http.MethodGet, "https://server/api/v1/namespaces/demo/secrets", nil)
	resp, err := rt.RoundTrip(req.WithContext(redact.WithReadsSanitized(req.Context())))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Body != sent {
		t.Error("the response body was read and replaced")
	}
	if got := san.String("said: planner-read-value"); got != "said: planner-read-value" {
		t.Errorf("the sanitiser was fed: %q", got)
	}
}
