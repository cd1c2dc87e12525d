package render

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

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
		got, err := decodeApplyMethod(tc.data)
		if err != nil || got != tc.want {
			t.Errorf("%s: got %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	for _, bad := range []string{"%%%", encodeRecord(t, "not json", true)} {
		if _, err := decodeApplyMethod(bad); err == nil {
			t.Errorf("decodeApplyMethod(%q): no error", bad)
		}
	}
}

// TestServerSideApply checks Helm 4's getUpgradeServerSideValue, with the
// tool's one difference: an install under "auto" stays client-side.
func TestServerSideApply(t *testing.T) {
	for _, tc := range []struct {
		flag, recorded string
		install, want  bool
	}{
		{"auto", "ssa", false, true},
		{"", "ssa", false, true},
		{"auto", "csa", false, false},
		{"auto", "", false, false},
		{"true", "", false, true},
		{"true", "csa", false, true},
		{"false", "ssa", false, false},
		{"auto", "", true, false},
		{"true", "", true, true},
	} {
		r := &Result{ApplyMethod: tc.recorded, Install: tc.install}
		if got := r.ServerSideApply(tc.flag); got != tc.want {
			t.Errorf("--server-side=%s, recorded %q, install %v: got %v, want %v", tc.flag, tc.recorded, tc.install, got, tc.want)
		}
	}
	for _, v := range []string{"", "auto", "true", "false"} {
		if err := ValidateServerSide(v); err != nil {
			t.Errorf("ValidateServerSide(%q) = %v", v, err)
		}
	}
	if err := ValidateServerSide("yes"); err == nil {
		t.Error("ValidateServerSide(yes): no error")
	}
}

// TestRecordedServerSide: the flag decides when it says true or false;
// under auto, a record that cannot be read (no storage, no release) or
// holds no apply method (the memory driver's) is client-side.
func TestRecordedServerSide(t *testing.T) {
	memory := &action.Configuration{Releases: storage.Init(driver.NewMemory())}
	rel := &release.Release{Name: "r", Namespace: "ns", Version: 1}
	for _, tc := range []struct {
		name, flag string
		cfg        *action.Configuration
		rel        *release.Release
		want       bool
	}{
		{"true without a record", ServerSideTrue, nil, nil, true},
		{"false", ServerSideFalse, memory, rel, false},
		{"auto without storage", ServerSideAuto, nil, rel, false},
		{"auto without a release", ServerSideAuto, memory, nil, false},
		{"auto, memory driver", ServerSideAuto, memory, rel, false},
		{"unset, memory driver", "", memory, rel, false},
	} {
		if got := RecordedServerSide(t.Context(), tc.cfg, tc.flag, tc.rel); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
