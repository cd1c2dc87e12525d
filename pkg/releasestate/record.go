package releasestate

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	rcommon4 "helm.sh/helm/v4/pkg/release/common"
	rel4 "helm.sh/helm/v4/pkg/release/v1"
	storage4 "helm.sh/helm/v4/pkg/storage"
	driver4 "helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// A release record is one revision as Helm's storage holds it: Helm 3's
// release type, plus what Helm 4 adds (apply_method), which Helm 3's type
// drops on decode. This file measures a record before Helm stores it,
// reads what Helm 3's type cannot, and edits a stored record keeping every
// field of it.

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

// RecordedApplyMethod reads the apply method Helm 4 stored with rel. Helm
// 3's release type has no such field and drops it on decode, so the stored
// record is read again (through live) and decoded here (DecodeRecord), in
// data "release" of the Secret or ConfigMap
// "sh.helm.release.v1.NAME.vREVISION". The memory driver holds no Helm 4
// release; the SQL driver is not read (ok false). When cfg's storage is a
// snapshot that holds rel's method as read with the history (Snapshot),
// that is the answer: a plan reads the record once.
func RecordedApplyMethod(ctx context.Context, cfg *action.Configuration, ns string, rel *release.Release) (method string, ok bool, err error) {
	if s, isSnap := cfg.Releases.Driver.(*snapshot); isSnap {
		if r, held := s.recordedOf(rel); held {
			return r.Method, r.OK, r.Err
		}
	}
	key := fmt.Sprintf("sh.helm.release.v1.%s.v%d", rel.Name, rel.Version)
	var data []byte
	switch cfg.Releases.Name() {
	case driver.MemoryDriverName:
		return "", true, nil
	case driver.SecretsDriverName, driver.ConfigMapsDriverName:
		cs, err := cfg.KubernetesClientSet()
		if err != nil {
			return "", false, err
		}
		r, err := live.ReleaseRecord(ctx, cs, cfg.Releases.Name() == driver.SecretsDriverName, ns, key)
		if err != nil {
			return "", false, fmt.Errorf("reading release record %s: %w", key, err)
		}
		data = r.Data
	default:
		return "", false, nil
	}
	method, err = decodeApplyMethod(data)
	if err != nil {
		return "", false, &UnreadableError{Key: key, Name: rel.Name, Namespace: ns, Revision: rel.Version, Why: err.Error()}
	}
	return method, true, nil
}

// RecordedServerSide reports whether Helm 4 recorded rel as applied
// server-side (RecordedApplyMethod): what an upgrade from rel under
// --server-side=auto applies with, for what a plan prepares before its
// render; false when it cannot be read.
func RecordedServerSide(ctx context.Context, cfg *action.Configuration, rel *release.Release) bool {
	if cfg == nil || cfg.Releases == nil || rel == nil {
		return false
	}
	method, ok, err := RecordedApplyMethod(ctx, cfg, rel.Namespace, rel)
	return ok && err == nil && method == plan.ApplyMethodSSA
}

// decodeApplyMethod returns the "apply_method" of an encoded release record
// ("" when absent, as in Helm 3's records).
func decodeApplyMethod(data []byte) (string, error) {
	var rec struct {
		ApplyMethod string `json:"apply_method"`
	}
	if err := DecodeRecord(data, &rec); err != nil {
		return "", err
	}
	return rec.ApplyMethod, nil
}

// ListReleases lists every release of cfg's storage as Helm's
// Storage.ListReleases does and, for the cluster drivers, the apply
// method Helm 4 recorded with each (RecordedApplyMethod), read from the
// same LIST and decoded with it: Helm 3's decode drops the method, and
// reading it afterwards would read and decode each record again. methods
// is nil for the other drivers. A record that does not decode is in
// unreadable, never dropped: Helm's drivers skip it, and the release
// would vanish from the list.
func ListReleases(ctx context.Context, cfg *action.Configuration) (rels []*release.Release, methods map[*release.Release]string, unreadable []*UnreadableError, err error) {
	name := cfg.Releases.Name()
	if name != driver.SecretsDriverName && name != driver.ConfigMapsDriverName {
		rels, err = cfg.Releases.ListReleases()
		return rels, nil, Unreadables(err), dropUnreadable(err)
	}
	cs, err := cfg.KubernetesClientSet()
	if err != nil {
		return nil, nil, nil, err
	}
	records, err := live.ReleaseRecords(ctx, cs, name == driver.SecretsDriverName, "")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("list: failed to list: %w", err)
	}
	stored, err := readRecords(records)
	methods = make(map[*release.Release]string, len(stored))
	for _, r := range stored {
		rel := &r.Release
		rels = append(rels, rel)
		methods[rel] = r.ApplyMethod
	}
	return rels, methods, Unreadables(err), nil
}

// dropUnreadable is err, nil when it only names unreadable records (which
// the caller has from Unreadables).
func dropUnreadable(err error) error {
	if len(Unreadables(err)) > 0 {
		return nil
	}
	return err
}

// EditRecord changes the status and description of a stored revision
// (edit gets them and changes them in place). A record Helm 4 wrote (it has
// an apply_method) is rewritten through Helm 4's storage, which keeps every
// field of it: Helm 3's drops apply_method, and Helm 4's next `helm upgrade`
// of a server-side release would then apply client-side. Other records are
// rewritten through Helm 3's storage, as Helm 3 wrote them.
func EditRecord(cfg *action.Configuration, ns, name string, version int, edit func(*release.Info)) error {
	if store, err := storage4For(cfg, ns); err != nil {
		return err
	} else if store != nil {
		r, err := store.Get(name, version)
		if err != nil {
			return err
		}
		rel, ok := r.(*rel4.Release)
		if !ok || rel == nil || rel.Info == nil {
			return fmt.Errorf("release record %s.v%d: unsupported release type %T", name, version, r)
		}
		if rel.ApplyMethod != "" {
			info := release.Info{Status: release.Status(rel.Info.Status), Description: rel.Info.Description}
			edit(&info)
			rel.Info.Status, rel.Info.Description = rcommon4.Status(info.Status), info.Description
			return store.Update(rel)
		}
	}
	rel, err := cfg.Releases.Get(name, version)
	if err != nil {
		return err
	}
	edit(rel.Info)
	return cfg.Releases.Update(rel)
}

// storage4For returns Helm 4's storage over the same Secrets or ConfigMaps
// as cfg's (nil for the other drivers).
func storage4For(cfg *action.Configuration, ns string) (*storage4.Storage, error) {
	name := cfg.Releases.Name()
	if name != driver.SecretsDriverName && name != driver.ConfigMapsDriverName {
		return nil, nil
	}
	cs, err := cfg.KubernetesClientSet()
	if err != nil {
		return nil, err
	}
	if name == driver.SecretsDriverName {
		return BoundStorage4(storage4.Init(driver4.NewSecrets(cs.CoreV1().Secrets(ns))), ns, clientOf(cs)), nil
	}
	return BoundStorage4(storage4.Init(driver4.NewConfigMaps(cs.CoreV1().ConfigMaps(ns))), ns, clientOf(cs)), nil
}

// LineFirst is the description line, then what the revision said before.
func LineFirst(line, description string) string {
	if description = strings.TrimSpace(description); description == "" {
		return line
	}
	return line + " (before: " + description + ")"
}

// DescribeFailed puts line before the description of revision version of
// release name (either Helm's record format), a revision Helm marked
// failed: `helm history` then says first what the watch saw, or what the
// recreate deleted and restored, then Helm's own error; first, because its
// table shows one cut line and Helm's error can span many. line must
// already be sanitised.
func DescribeFailed(cfg *action.Configuration, ns, name string, version int, line string) error {
	return EditRecord(cfg, ns, name, version, func(info *release.Info) {
		info.Description = LineFirst(line, info.Description)
	})
}

// MarkRolloutFailed records in revision version of release name (either
// Helm's record format) that its rollout failed after Helm deployed it: the
// status becomes failed, as Helm's own --wait leaves a revision whose
// resources never got ready, and the description (what `helm history`
// shows) says which workload failed and why. line must already be
// sanitised.
func MarkRolloutFailed(cfg *action.Configuration, ns, name string, version int, line string) error {
	return EditRecord(cfg, ns, name, version, func(info *release.Info) {
		info.Status = release.StatusFailed
		info.Description = line
	})
}

func clientOf(cs kubernetes.Interface) func() (kubernetes.Interface, error) {
	return func() (kubernetes.Interface, error) { return cs, nil }
}
