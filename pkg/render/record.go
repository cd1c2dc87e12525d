package render

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
)

// recordLimit is what one release record may hold in the storage the
// driver names (HELM_DRIVER): a Secret's or a ConfigMap's data is limited to
// 1 MiB; the memory and SQL drivers have no such limit (0).
func recordLimit(driver string) (int, string) {
	switch strings.ToLower(driver) {
	case "", "secret", "secrets":
		return corev1.MaxSecretSize, "a Secret"
	case "configmap", "configmaps":
		return corev1.MaxSecretSize, "a ConfigMap" // the same 1 MiB (validation.MaxConfigMapSize)
	}
	return 0, ""
}

// recordSize is the size of rel as Helm's storage drivers store it:
// base64 of the gzipped JSON (helm pkg/storage/driver/util.go encodeRelease).
func recordSize(rel *release.Release) (int, error) {
	data, err := json.Marshal(rel)
	if err != nil {
		return 0, err
	}
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return 0, err
	}
	if _, err := w.Write(data); err != nil {
		return 0, err
	}
	if err := w.Close(); err != nil {
		return 0, err
	}
	return base64.StdEncoding.EncodedLen(buf.Len()), nil
}

// RecordBlocker says why Helm could not store rel with driver, or "" when
// it can: Helm would fail only after rendering, or — for an upgrade that
// stores the pending record first — before touching the cluster, with an
// opaque "too long" error from the API server.
func RecordBlocker(rel *release.Release, driver string) (string, error) {
	limit, where := recordLimit(driver)
	if limit == 0 {
		return "", nil
	}
	size, err := recordSize(rel)
	if err != nil {
		return "", fmt.Errorf("measuring the release record: %w", err)
	}
	if size <= limit {
		return "", nil
	}
	return fmt.Sprintf("the release record Helm would store for revision %d is %s (chart, values and manifest, gzipped and base64-encoded), more than the %s %s holds (HELM_DRIVER=%s): Helm would fail to store it; make the values or chart files smaller, or use HELM_DRIVER=sql",
		rel.Version, mib(size), mib(limit), where, driverName(driver)), nil
}

func mib(n int) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }

func driverName(d string) string {
	if d == "" {
		return "secret (default)"
	}
	return d
}
