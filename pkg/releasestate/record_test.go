package releasestate

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

func TestRecordBlocker(t *testing.T) {
	noise := make([]byte, 900<<10) // incompressible: ~1.2 MiB once base64-encoded twice
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	small := &release.Release{Name: "app", Version: 2, Manifest: "kind: ConfigMap"}
	big := &release.Release{Name: "app", Version: 2, Config: map[string]interface{}{"blob": base64.StdEncoding.EncodeToString(noise)}}
	for _, tc := range []struct {
		name   string
		rel    *release.Release
		driver string
		want   string
	}{
		{name: "small, secret driver", rel: small, driver: ""},
		{name: "too big for a Secret", rel: big, driver: "", want: "more than the 1.00 MiB a Secret holds (HELM_DRIVER=secret (default))"},
		{name: "too big for a ConfigMap", rel: big, driver: "configmap", want: "a ConfigMap holds (HELM_DRIVER=configmap)"},
		{name: "sql has no such limit", rel: big, driver: "sql"},
		{name: "memory has no such limit", rel: big, driver: "memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RecordBlocker(tc.rel, tc.driver)
			if err != nil {
				t.Fatal(err)
			}
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("blocker %q, want one containing %q", got, tc.want)
			}
		})
	}
}

// encodeRecord encodes a release record as Helm's storage drivers do:
// base64(gzip(JSON)), or base64(JSON) when not compressed.
func encodeRecord(t *testing.T, json string, compress bool) string {
	t.Helper()
	b := []byte(json)
	if compress {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		b = buf.Bytes()
	}
	return base64.StdEncoding.EncodeToString(b)
}

func TestDecodeApplyMethod(t *testing.T) {
	// A Helm 4 (v4.3.1) record, trimmed: apply_method sits at the top level
	// of pkg/release/v1.Release.
	helm4 := `{"name":"r","info":{"status":"deployed"},"manifest":"","version":1,"namespace":"h4","apply_method":"ssa"}`
	helm3 := `{"name":"r","info":{"status":"deployed"},"manifest":"","version":1,"namespace":"h3"}`
	for _, tc := range []struct {
		name, data, want string
	}{
		{"helm4 gzip", encodeRecord(t, helm4, true), plan.ApplyMethodSSA},
		{"helm4 plain", encodeRecord(t, helm4, false), plan.ApplyMethodSSA},
		{"helm4 csa", encodeRecord(t, `{"name":"r","apply_method":"csa"}`, true), plan.ApplyMethodCSA},
		{"helm3", encodeRecord(t, helm3, true), ""},
	} {
		got, err := decodeApplyMethod([]byte(tc.data))
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	for _, bad := range []string{"%%%", encodeRecord(t, "not json", true)} {
		if _, err := decodeApplyMethod([]byte(bad)); err == nil {
			t.Errorf("decodeApplyMethod(%q): no error", bad)
		}
	}
}
