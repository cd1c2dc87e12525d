package render

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/action"
	"k8s.io/client-go/rest"
)

// SecretLookups is what a chart's `lookup` may read of the cluster's
// Secrets in a render whose chart is not the user's own (gitops --live: a
// pull request's chart, rendered with the CI job's credentials). A
// template can print what it reads in any transformation (upper, hex,
// base32, spelled out a letter at a time), which no masker can recognise,
// so what it may not read it never gets: a lookup of a Secret outside
// Namespaces is answered as the API server answers for a Secret that does
// not exist (a GET 404, a LIST no items), before any request is sent, and
// is named in Refused. Every other kind is read as Helm reads it.
type SecretLookups struct {
	// Namespaces the chart may read Secrets in ("*": every namespace).
	Namespaces []string

	mu      sync.Mutex
	refused []string
}

// Refused names each Secret lookup answered "not found" (NAMESPACE/NAME,
// or NAMESPACE/* for a list; "*" the cluster), in the order asked, once.
func (s *SecretLookups) Refused() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.refused)
}

func (s *SecretLookups) refuse(what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.refused, what) {
		s.refused = append(s.refused, what)
	}
}

// allows reports whether the chart may read Secrets in namespace ns ("":
// every namespace at once).
func (s *SecretLookups) allows(ns string) bool {
	return slices.Contains(s.Namespaces, "*") || ns != "" && slices.Contains(s.Namespaces, ns)
}

// secretRequest parses a core v1 Secret read: its namespace ("" for the
// cluster), its name ("" for a list).
func secretRequest(req *http.Request) (ns, name string, ok bool) {
	if req.Method != http.MethodGet {
		return "", "", false
	}
	path := req.URL.Path
	i := strings.Index(path, "/api/v1/")
	if i < 0 {
		return "", "", false
	}
	parts := strings.Split(strings.Trim(path[i+len("/api/v1/"):], "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] == "secrets":
		return "", "", true
	case len(parts) >= 3 && parts[0] == "namespaces" && parts[2] == "secrets":
		if len(parts) == 3 {
			return parts[1], "", true
		}
		return parts[1], parts[3], true
	}
	return "", "", false
}

// RoundTrip answers a Secret read the chart may not make, and sends the
// rest on.
type secretLookupTransport struct {
	next   http.RoundTripper
	policy *SecretLookups
}

func (t secretLookupTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ns, name, ok := secretRequest(req)
	if !ok || t.policy.allows(ns) {
		return t.next.RoundTrip(req)
	}
	what := ns + "/" + name
	switch {
	case ns == "":
		what = "*"
	case name == "":
		what = ns + "/*"
	}
	t.policy.refuse(what)
	if name == "" {
		return jsonResponse(req, http.StatusOK, `{"kind":"SecretList","apiVersion":"v1","metadata":{},"items":[]}`), nil
	}
	return jsonResponse(req, http.StatusNotFound, fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"secrets %q not found","reason":"NotFound","details":{"name":%q,"kind":"secrets"},"code":404}`, name, name)), nil
}

func jsonResponse(req *http.Request, code int, body string) *http.Response {
	return &http.Response{StatusCode: code, Status: http.StatusText(code), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": []string{"application/json"}}, Body: io.NopCloser(bytes.NewBufferString(body)),
		ContentLength: int64(len(body)), Request: req}
}

// lookupGetter is the configuration's REST client getter with the Secret
// reads of s answered by it: Helm's engine builds `lookup`'s client from
// ToRESTConfig, and the render uses the getter for nothing else that
// reads Secrets (its storage is a snapshot, its kube client the
// renderClient).
type lookupGetter struct {
	action.RESTClientGetter
	policy *SecretLookups
}

func (g lookupGetter) ToRESTConfig() (*rest.Config, error) {
	cfg, err := g.RESTClientGetter.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return secretLookupTransport{next: rt, policy: g.policy} })
	return cfg, nil
}
