package render

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestHTTPFallback: as Helm 3's default registry transport, a registry
// that answers HTTPS with plain HTTP is asked over HTTP, then and after.
func TestHTTPFallback(t *testing.T) {
	var asked int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { asked++ }))
	defer srv.Close()
	tr := &httpFallback{next: http.DefaultTransport}
	for i := range 2 {
		req, _ := http.NewRequest(http.MethodGet, "https://"+srv.Listener.Addr().String()+"/v2/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp.Body.Close()
		if req.URL.Scheme != "http" || !tr.forceHTTP.Load() {
			t.Errorf("request %d went as %s (forced %v), want http", i, req.URL.Scheme, tr.forceHTTP.Load())
		}
	}
	if asked != 2 {
		t.Errorf("the registry was asked %d times over HTTP, want 2", asked)
	}
}
