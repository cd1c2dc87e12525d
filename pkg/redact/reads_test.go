package redact

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

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
			san := NewSanitizer(NewMasker())
			rt := SecretReads{Sanitizer: san, Next: roundTripFunc(func(*http.Request) (*http.Response, error) {
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
	san := NewSanitizer(NewMasker())
	sent := io.NopCloser(strings.NewReader(body))
	rt := SecretReads{Sanitizer: san, Next: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: sent}, nil
	})}
	req := httptest.NewRequest(http.MethodGet, "https://server/api/v1/namespaces/demo/secrets", nil)
	resp, err := rt.RoundTrip(req.WithContext(WithReadsSanitized(req.Context())))
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
