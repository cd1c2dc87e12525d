package render

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// Values of Options.ServerSide, Helm 4's --server-side.
const (
	ServerSideAuto  = "auto"
	ServerSideTrue  = "true"
	ServerSideFalse = "false"
)

// ValidateServerSide checks a --server-side value as Helm 4 does ("" is
// "auto").
func ValidateServerSide(v string) error {
	switch v {
	case "", ServerSideAuto, ServerSideTrue, ServerSideFalse:
		return nil
	}
	return fmt.Errorf("invalid --server-side %q: must be \"true\", \"false\" or \"auto\"", v)
}

// ServerSideApply reports whether the next revision is applied with
// server-side apply, as Helm 4's upgrade decides it
// (getUpgradeServerSideValue): "auto" keeps the method recorded in the last
// revision. An install with "auto" stays client-side, as Helm 3 installs
// (Helm 4 would install server-side; see docs/helm4.md);
// --server-side=true asks for server-side.
func (r *Result) ServerSideApply(serverSide string) bool {
	switch serverSide {
	case ServerSideTrue:
		return true
	case ServerSideFalse:
		return false
	}
	return !r.Install && r.ApplyMethod == plan.ApplyMethodSSA
}

// RecordedServerSide reports whether a plan of an upgrade from rel under
// serverSide (--server-side) will be server-side, reading the apply method
// Helm 4 recorded with rel as Render does (Result.ServerSideApply): for
// what a plan prepares before its render, false when it cannot be read.
func RecordedServerSide(ctx context.Context, cfg *action.Configuration, serverSide string, rel *release.Release) bool {
	switch serverSide {
	case ServerSideTrue:
		return true
	case ServerSideFalse:
		return false
	}
	if cfg == nil || cfg.Releases == nil || rel == nil {
		return false
	}
	method, ok, err := recordedApplyMethod(ctx, cfg, rel.Namespace, rel)
	return ok && err == nil && method == plan.ApplyMethodSSA
}

// recordedApplyMethod reads the apply method Helm 4 stored with rel. Helm
// 3's release type has no such field and drops it on decode, so the stored
// record is read again and decoded here, the way Helm's storage drivers
// encode it: base64(gzip(JSON)), in data "release" of the Secret or
// ConfigMap "sh.helm.release.v1.NAME.vREVISION". The memory driver holds no
// Helm 4 release; the SQL driver is not read (ok false).
func recordedApplyMethod(ctx context.Context, cfg *action.Configuration, ns string, rel *release.Release) (method string, ok bool, err error) {
	key := fmt.Sprintf("sh.helm.release.v1.%s.v%d", rel.Name, rel.Version)
	var data string
	switch cfg.Releases.Name() {
	case driver.MemoryDriverName:
		return "", true, nil
	case driver.SecretsDriverName, driver.ConfigMapsDriverName:
		cs, err := cfg.KubernetesClientSet()
		if err != nil {
			return "", false, err
		}
		data, err = live.ReleaseRecord(ctx, cs, cfg.Releases.Name() == driver.SecretsDriverName, ns, key)
		if err != nil {
			return "", false, fmt.Errorf("reading release record %s: %w", key, err)
		}
	default:
		return "", false, nil
	}
	method, err = decodeApplyMethod(data)
	if err != nil {
		return "", false, fmt.Errorf("release record %s: %w", key, err)
	}
	return method, true, nil
}

// decodeApplyMethod returns the "apply_method" of an encoded release record
// ("" when absent, as in Helm 3's records).
func decodeApplyMethod(data string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return "", fmt.Errorf("decoding base64: %w", err)
	}
	if len(b) > 3 && bytes.Equal(b[:3], []byte{0x1f, 0x8b, 0x08}) {
		r, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return "", fmt.Errorf("decompressing: %w", err)
		}
		defer r.Close()
		if b, err = inputfile.ReadAtMost(r, inputfile.ManifestMax); err != nil {
			return "", fmt.Errorf("decompressing: %w", err)
		}
	}
	var rec struct {
		ApplyMethod string `json:"apply_method"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return "", fmt.Errorf("decoding JSON: %w", err)
	}
	return rec.ApplyMethod, nil
}
