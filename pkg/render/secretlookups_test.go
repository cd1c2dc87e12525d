package render

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

type sentTransport struct{ sent []string }

func (s *sentTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	s.sent = append(s.sent, req.Method+" "+req.URL.Path)
	return jsonResponse(req, http.StatusOK, `{}`), nil
}

// TestSecretLookups: a Secret read outside the namespaces allowed never
// reaches the server and is answered as for a Secret that does not exist;
// every other read is sent.
func TestSecretLookups(t *testing.T) {
	for _, tc := range []struct {
		path    string
		allowed []string
		sent    bool
		code    int
		refused string
	}{
		{path: "/api/v1/namespaces/prod/secrets/db", sent: false, code: 404, refused: "prod/db"},
		{path: "/api/v1/namespaces/prod/secrets", sent: false, code: 200, refused: "prod/*"},
		{path: "/api/v1/secrets", sent: false, code: 200, refused: "*"},
		{path: "/prefix/api/v1/namespaces/prod/secrets/db", sent: false, code: 404, refused: "prod/db"},
		{path: "/api/v1/namespaces/prod/secrets/db", allowed: []string{"prod"}, sent: true, code: 200},
		{path: "/api/v1/secrets", allowed: []string{"prod"}, sent: false, code: 200, refused: "*"},
		{path: "/api/v1/secrets", allowed: []string{"*"}, sent: true, code: 200},
		{path: "/api/v1/namespaces/prod/configmaps/db", sent: true, code: 200},
		{path: "/apis/apps/v1/namespaces/prod/deployments/secrets", sent: true, code: 200},
		{path: "/api/v1/namespaces/secrets", sent: true, code: 200}, // the Namespace named secrets
	} {
		next := &sentTransport{}
		policy := &SecretLookups{Namespaces: tc.allowed}
		req, _ := http.NewRequest(http.MethodGet, "https://127.0.0.1:6443"+tc.path, nil)
		resp, err := secretLookupTransport{next: next, policy: policy}.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		if (len(next.sent) > 0) != tc.sent || resp.StatusCode != tc.code {
			t.Errorf("%s (allowed %v): sent %v, code %d; want sent %v, code %d", tc.path, tc.allowed, next.sent, resp.StatusCode, tc.sent, tc.code)
		}
		if got := strings.Join(policy.Refused(), ","); got != tc.refused {
			t.Errorf("%s: refused %q, want %q", tc.path, got, tc.refused)
		}
		if tc.code == 404 && !strings.Contains(string(body), `"reason":"NotFound"`) {
			t.Errorf("%s: body %s, want a NotFound Status", tc.path, body)
		}
	}
}
