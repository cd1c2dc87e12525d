package fetchbound

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestTransport: every response body is read within its kind's limit: one
// announced larger is refused before its body is read, one that announces
// nothing is cut at the limit with an error naming the URL and the limit;
// one within it is read whole, through http and https.
func TestTransport(t *testing.T) {
	const size = ManifestMax + 10
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := size
		if strings.HasSuffix(r.URL.Path, "/small") {
			n = 100
		}
		if r.URL.Query().Get("length") == "1" {
			w.Header().Set("Content-Length", strconv.Itoa(n))
		}
		w.Write([]byte(strings.Repeat("x", n)))
	}))
	defer srv.Close()
	client := &http.Client{Transport: HTTPTransport(nil)}
	for _, tc := range []struct {
		path string
		want string // "" read whole
		read int
	}{
		{"/v2/chart/manifests/1.0.0?length=1", "an OCI manifest of 4.0 MiB, over the limit of 4 MiB", 0},
		{"/v2/chart/manifests/1.0.0", "an OCI manifest over the limit of 4 MiB", ManifestMax},
		{"/v2/chart/manifests/small", "", 100},
		{"/charts/index.yaml", "", size}, // under the index's limit
	} {
		resp, err := client.Get(srv.URL + tc.path)
		var data []byte
		if err == nil {
			data, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if tc.want == "" {
			if err != nil || len(data) != tc.read {
				t.Errorf("%s: %d bytes, %v; want %d, no error", tc.path, len(data), err, tc.read)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), srv.URL) || !IsTooLarge(err) {
			t.Errorf("%s: %v, want an error naming the URL and %q", tc.path, err, tc.want)
		}
		if len(data) != tc.read {
			t.Errorf("%s: read %d bytes before the error, want %d", tc.path, len(data), tc.read)
		}
	}
}
