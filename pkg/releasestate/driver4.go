package releasestate

import (
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/storage/driver"

	release4 "helm.sh/helm/v4/pkg/release"
	rel4 "helm.sh/helm/v4/pkg/release/v1"
	storage4 "helm.sh/helm/v4/pkg/storage"
	driver4 "helm.sh/helm/v4/pkg/storage/driver"
	"k8s.io/client-go/kubernetes"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
)

// boundedDriver4 is boundedDriver in front of Helm 4's driver: Helm 4
// decodes a record as Helm 3 does, unbounded.
type boundedDriver4 struct {
	driver4.Driver
	records recordStore
}

// BoundStorage4 puts the bounded reader in front of Helm 4's storage
// store when it is a cluster driver (store itself otherwise), for
// namespace; client is Helm's typed client.
func BoundStorage4(store *storage4.Storage, namespace string, client func() (kubernetes.Interface, error)) *storage4.Storage {
	rs, ok := newRecordStore(store.Name(), namespace, client)
	if !ok {
		return store
	}
	out := storage4.Init(&boundedDriver4{Driver: store.Driver, records: rs})
	out.MaxHistory = store.MaxHistory
	return out
}

func readRecord4(data []byte) (*rel4.Release, error) {
	var rel rel4.Release
	if err := DecodeRecord(data, &rel); err != nil {
		return nil, err
	}
	return &rel, nil
}

func (d *boundedDriver4) Get(key string) (release4.Releaser, error) {
	r, err := d.records.get(key)
	if err != nil {
		return nil, translate4(err)
	}
	rel, err := readRecord4(r.Data)
	if err != nil {
		return nil, unreadableRecord(r, err)
	}
	rel.Labels = systemLabelsRemoved(r.Labels)
	return rel, nil
}

// translate4 is err with Helm 4's "not found" for Helm 3's.
func translate4(err error) error {
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return driver4.ErrReleaseNotFound
	}
	return err
}

func (d *boundedDriver4) List(filter func(release4.Releaser) bool) ([]release4.Releaser, error) {
	raw, err := d.records.list(nil)
	if err != nil {
		return nil, fmt.Errorf("list: failed to list: %w", err)
	}
	return readAll4(raw, filter)
}

func (d *boundedDriver4) Query(labels map[string]string) ([]release4.Releaser, error) {
	raw, err := d.records.list(labels)
	if err != nil {
		return nil, fmt.Errorf("query: failed to query with labels: %w", err)
	}
	if len(raw) == 0 {
		return nil, driver4.ErrReleaseNotFound
	}
	return readAll4(raw, func(release4.Releaser) bool { return true })
}

// readAll4 decodes raw as Helm 4's releases: those that decode and that
// filter keeps, and the error naming those that do not decode.
func readAll4(raw []live.EncodedRecord, filter func(release4.Releaser) bool) ([]release4.Releaser, error) {
	var out []release4.Releaser
	var bad []*UnreadableError
	for _, r := range raw {
		rel, err := readRecord4(r.Data)
		if err != nil {
			bad = append(bad, unreadableRecord(r, err))
			continue
		}
		rel.Labels = r.Labels
		if filter(rel) {
			out = append(out, rel)
		}
	}
	return out, unreadableOf(bad)
}

func (d *boundedDriver4) Delete(key string) (release4.Releaser, error) {
	rel, err := d.Get(key)
	if err != nil {
		return nil, err
	}
	return rel, d.records.delete(key)
}
