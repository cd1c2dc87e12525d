package releasestate

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kblabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
)

// boundedDriver is Helm's Secrets or ConfigMaps driver with every read
// decoded by DecodeRecord: Helm's own decodes a record with an unbounded
// gzip (a 1 MiB record inflating to 760 MiB costs gigabytes) and skips the
// records it cannot decode, so a broken release vanishes from a list and
// its name reads "not found". Reads return the records that decode and an
// *UnreadableRecordsError naming the others; Create and Update are Helm's
// driver's, which encode and never decode. driver4.go is the same in front
// of Helm 4's driver.
type boundedDriver struct {
	driver.Driver
	records recordStore
}

// recordStore reads and deletes the records of one namespace ("" every
// namespace) of the Secrets (secrets) or ConfigMaps storage, still
// encoded.
type recordStore struct {
	secrets   bool
	namespace string
	client    func() (kubernetes.Interface, error)
}

// boundStorage puts a boundedDriver in front of store's driver when it is
// one of the cluster drivers (the memory and SQL drivers are left as they
// are: the first holds what this process stored, the second is not read
// here).
func boundStorage(store *storage.Storage, namespace string, client func() (kubernetes.Interface, error)) *storage.Storage {
	rs, ok := newRecordStore(store.Name(), namespace, client)
	if !ok {
		return store
	}
	out := storage.Init(&boundedDriver{Driver: store.Driver, records: rs})
	out.MaxHistory, out.Log = store.MaxHistory, store.Log
	return out
}

// newRecordStore is the store of the driver named name (Helm 3's and 4's
// names are the same), ok false when it is no cluster driver.
func newRecordStore(name, namespace string, client func() (kubernetes.Interface, error)) (recordStore, bool) {
	if name != driver.SecretsDriverName && name != driver.ConfigMapsDriverName {
		return recordStore{}, false
	}
	return recordStore{secrets: name == driver.SecretsDriverName, namespace: namespace, client: sync.OnceValues(client)}, true
}

// get is record key, driver.ErrReleaseNotFound when there is none.
func (s recordStore) get(key string) (live.EncodedRecord, error) {
	cs, err := s.client()
	if err != nil {
		return live.EncodedRecord{}, err
	}
	r, err := live.ReleaseRecord(context.Background(), cs, s.secrets, s.namespace, key)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return r, driver.ErrReleaseNotFound
		}
		return r, fmt.Errorf("get: failed to get %q: %w", key, err)
	}
	if r.Namespace == "" {
		r.Namespace = s.namespace
	}
	return r, nil
}

// list is the records that match labels (every one of Helm's when nil).
func (s recordStore) list(labels map[string]string) ([]live.EncodedRecord, error) {
	ls := kblabels.Set{"owner": "helm"}
	if labels != nil {
		ls = kblabels.Set{}
		for k, v := range labels {
			if errs := validation.IsValidLabelValue(v); len(errs) != 0 {
				return nil, fmt.Errorf("invalid label value: %q: %s", v, strings.Join(errs, "; "))
			}
			ls[k] = v
		}
	}
	cs, err := s.client()
	if err != nil {
		return nil, err
	}
	return live.ReleaseRecordsMatching(context.Background(), cs, s.secrets, s.namespace, ls.AsSelector().String())
}

// delete deletes record key (read first through get and the decoder, as
// Helm's Delete reads it: not through Helm's, which decodes unbounded).
func (s recordStore) delete(key string) error {
	cs, err := s.client()
	if err != nil {
		return err
	}
	if s.secrets {
		return cs.CoreV1().Secrets(s.namespace).Delete(context.Background(), key, metav1.DeleteOptions{})
	}
	return cs.CoreV1().ConfigMaps(s.namespace).Delete(context.Background(), key, metav1.DeleteOptions{})
}

// unreadableRecord is the error of record r, which does not decode (why).
func unreadableRecord(r live.EncodedRecord, why error) *UnreadableError {
	rev, _ := strconv.Atoi(r.Labels["version"])
	return &UnreadableError{Key: r.Name, Name: r.Labels["name"], Namespace: r.Namespace, Revision: rev, Why: why.Error()}
}

// readRecord decodes one stored record: the release with the labels as
// Helm's drivers give them, or an *UnreadableError.
func readRecord(r live.EncodedRecord) (*StoredRelease, *UnreadableError) {
	rel, err := DecodeRelease(r.Data)
	if err != nil {
		return nil, unreadableRecord(r, err)
	}
	rel.Labels = r.Labels
	return rel, nil
}

// readRecords decodes records: those that decode, and the error naming
// the others (nil when every one decodes).
func readRecords(raw []live.EncodedRecord) ([]*StoredRelease, error) {
	var rels []*StoredRelease
	var bad []*UnreadableError
	for _, r := range raw {
		rel, err := readRecord(r)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		rels = append(rels, rel)
	}
	return rels, unreadableOf(bad)
}

// unreadableOf is nil, or the error naming bad.
func unreadableOf(bad []*UnreadableError) error {
	if len(bad) == 0 {
		return nil
	}
	return &UnreadableRecordsError{Records: bad}
}

func (d *boundedDriver) Get(key string) (*release.Release, error) {
	r, err := d.records.get(key)
	if err != nil {
		return nil, err
	}
	rel, bad := readRecord(r)
	if bad != nil {
		return nil, bad
	}
	rel.Labels = systemLabelsRemoved(rel.Labels) // as Helm's Get gives them
	return &rel.Release, nil
}

func (d *boundedDriver) List(filter func(*release.Release) bool) ([]*release.Release, error) {
	raw, err := d.records.list(nil)
	if err != nil {
		return nil, fmt.Errorf("list: failed to list: %w", err)
	}
	rels, err := readRecords(raw)
	var out []*release.Release
	for _, r := range rels {
		if filter(&r.Release) {
			out = append(out, &r.Release)
		}
	}
	return out, err
}

func (d *boundedDriver) Query(labels map[string]string) ([]*release.Release, error) {
	raw, err := d.records.list(labels)
	if err != nil {
		return nil, fmt.Errorf("query: failed to query with labels: %w", err)
	}
	if len(raw) == 0 {
		return nil, driver.ErrReleaseNotFound
	}
	rels, err := readRecords(raw)
	out := make([]*release.Release, len(rels))
	for i, r := range rels {
		out[i] = &r.Release
	}
	return out, err
}

func (d *boundedDriver) Delete(key string) (*release.Release, error) {
	rel, err := d.Get(key)
	if err != nil {
		return nil, err
	}
	return rel, d.records.delete(key)
}

// systemLabelsRemoved is labels without Helm's own (name, owner, status,
// version, createdAt, modifiedAt), as Helm's Get returns them.
func systemLabelsRemoved(labels map[string]string) map[string]string {
	out := make(map[string]string, len(labels))
	system := driver.GetSystemLabels()
	for k, v := range labels {
		if !slices.Contains(system, k) {
			out[k] = v
		}
	}
	return out
}
