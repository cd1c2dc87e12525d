package render

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/release"
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
