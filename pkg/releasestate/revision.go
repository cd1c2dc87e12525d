package releasestate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// A revision record is what the tool knew when it made a revision of a
// release — who ran it, the classified changes with their acknowledgements,
// what it recreated, the rollout's outcome, a later --recover or uninstall — kept beside
// Helm's own record of that revision for `log`. It is a ConfigMap, not a
// Secret: it never holds a Secret value (the changes are the report's
// masked form), so it needs no Secret's protection, and a Secret would be
// taken for one holding values by the tool's own Secret-read masking. One
// LIST by label finds a release's records; Helm's history decides which
// are kept (PruneRevisionRecords), so --history-max prunes them too.

// RevisionRecordAPIVersion versions the record's JSON.
const RevisionRecordAPIVersion = "safe-upgrade/revision/v1"

// RevisionRecordMaxBytes bounds a record's JSON (a ConfigMap holds at most
// 1 MiB, Helm's own record shares the namespace's etcd): past it the diffs
// are dropped, then the changes, each with a note saying so.
const RevisionRecordMaxBytes = 256 << 10

// Labels of a revision record: found with one LIST of the release's.
const (
	RevisionRecordLabel        = "helm-safe-upgrade.io/record"
	RevisionRecordReleaseLabel = "helm-safe-upgrade.io/release"
	revisionRecordRevisionKey  = "helm-safe-upgrade.io/revision"
	revisionRecordKind         = "revision"
	revisionRecordDataKey      = "record.json"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// RevisionRecordName is the ConfigMap of a release's revision, named as
// Helm names its own (sh.helm.release.v1.NAME.vREV).
func RevisionRecordName(release string, revision int) string {
	return fmt.Sprintf("safe-upgrade.revision.%s.v%d", release, revision)
}

// RevisionRecord is one revision's record. Changes, Summary and Outcome are
// the JSON report's own forms (pkg/report), already masked; this package
// only stores them.
type RevisionRecord struct {
	APIVersion string `json:"apiVersion"`
	Release    string `json:"release"`
	Namespace  string `json:"namespace"`
	Revision   int    `json:"revision"`
	// Operation is install, upgrade, rollback or uninstall; RollbackTo the
	// revision a rollback went back to.
	Operation  string `json:"operation"`
	RollbackTo int    `json:"rollbackTo,omitempty"`
	// ManifestDigest is ManifestDigest of the manifest Helm stored for the
	// revision: a record whose digest differs is not this revision's (an
	// apply that failed before Helm wrote it, a later plain helm upgrade
	// that reused the number).
	ManifestDigest string    `json:"manifestDigest"`
	Recorded       time.Time `json:"recorded"`
	By             plan.Who  `json:"by"`
	// Helm is what Helm said of the apply: its status, or its error.
	Helm string `json:"helm,omitempty"`
	// Summary, Changes (without noops) and Outcome are pkg/report's JSON.
	Summary   json.RawMessage `json:"summary,omitempty"`
	Changes   json.RawMessage `json:"changes,omitempty"`
	Outcome   json.RawMessage `json:"outcome,omitempty"`
	Recreated []string        `json:"recreated,omitempty"`
	// Events are what happened to the revision after its apply: a
	// --recover run that settled it, the uninstall that ended it (with
	// --keep-history).
	Events []plan.Event `json:"events,omitempty"`
	// Notes say what the record lacks (cut to its bound).
	Notes []string `json:"notes,omitempty"`
}

// ManifestDigest is the one digest of a manifest, its sha256 in hex: a
// revision record pins its revision's manifest with it as it is, the
// recreate journal spelled with its algorithm (JournalDigest). Both forms
// are stored: each stays as records already hold it.
func ManifestDigest(manifest string) string {
	sum := sha256.Sum256([]byte(manifest))
	return hex.EncodeToString(sum[:])
}

// JournalDigest is ManifestDigest as the recreate journal stores it:
// "sha256:<hex>".
func JournalDigest(manifest string) string { return "sha256:" + ManifestDigest(manifest) }

// Encode is the record's JSON within RevisionRecordMaxBytes: when it is
// larger, the changes' diffs are dropped (cut), then the changes
// themselves, each step noted in the record.
func (r *RevisionRecord) Encode(cut func(json.RawMessage) json.RawMessage) ([]byte, error) {
	r.APIVersion = RevisionRecordAPIVersion
	data, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	if len(data) <= RevisionRecordMaxBytes {
		return data, nil
	}
	short := *r
	if cut != nil {
		short.Changes = cut(r.Changes)
		short.Notes = append(append([]string{}, r.Notes...), fmt.Sprintf("the changes' diffs are left out: the record is bounded to %d KiB", RevisionRecordMaxBytes>>10))
		if data, err = json.Marshal(&short); err == nil && len(data) <= RevisionRecordMaxBytes {
			return data, nil
		}
	}
	short.Changes, short.Outcome = nil, nil
	short.Notes = append(append([]string{}, r.Notes...), fmt.Sprintf("the changes and the outcome are left out: the record is bounded to %d KiB (the counts are kept)", RevisionRecordMaxBytes>>10))
	if data, err = json.Marshal(&short); err != nil {
		return nil, err
	}
	if len(data) > RevisionRecordMaxBytes {
		return nil, fmt.Errorf("revision record of %s/%s revision %d: %d bytes, over its bound of %d even without its changes", r.Namespace, r.Release, r.Revision, len(data), RevisionRecordMaxBytes)
	}
	return data, nil
}

// WriteRevisionRecord creates or replaces rec's ConfigMap in its namespace
// (data as Encode made it).
func WriteRevisionRecord(ctx context.Context, dyn dynamic.Interface, rec *RevisionRecord, data []byte) error {
	name := RevisionRecordName(rec.Release, rec.Revision)
	cm := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{
			"name": name, "namespace": rec.Namespace,
			"labels": map[string]interface{}{
				RevisionRecordLabel:            revisionRecordKind,
				RevisionRecordReleaseLabel:     rec.Release,
				revisionRecordRevisionKey:      strconv.Itoa(rec.Revision),
				"app.kubernetes.io/managed-by": "helm-safe-upgrade",
			},
		},
		"data": map[string]interface{}{revisionRecordDataKey: string(data)},
	}}
	client := dyn.Resource(configMaps).Namespace(rec.Namespace)
	_, err := client.Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var old *unstructured.Unstructured
		if old, err = client.Get(ctx, name, metav1.GetOptions{}); err == nil {
			cm.SetResourceVersion(old.GetResourceVersion())
			_, err = client.Update(ctx, cm, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("writing the revision record ConfigMap %s/%s: %w", rec.Namespace, name, err)
	}
	return nil
}

// ListRevisionRecords reads the records of release in ns with one LIST, by
// revision. Anyone who may write ConfigMaps there can write one: a record
// that does not decode, or names another release or revision than its
// labels, is left out and named in bad.
func ListRevisionRecords(ctx context.Context, dyn dynamic.Interface, ns, release string) (recs map[int]*RevisionRecord, bad []string, err error) {
	list, err := dyn.Resource(configMaps).Namespace(ns).List(ctx, metav1.ListOptions{
		LabelSelector: RevisionRecordLabel + "=" + revisionRecordKind + "," + RevisionRecordReleaseLabel + "=" + release,
	})
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("listing the revision records of release %q in namespace %s: %w", release, ns, err)
	}
	recs = map[int]*RevisionRecord{}
	for i := range list.Items {
		item := &list.Items[i]
		rec, err := decodeRevisionRecord(item, release, ns)
		if err != nil {
			bad = append(bad, fmt.Sprintf("ConfigMap %s/%s: %v", ns, item.GetName(), err))
			continue
		}
		recs[rec.Revision] = rec
	}
	return recs, bad, nil
}

// revisionRecordMaxRead bounds what a record read may hold: the write's
// bound and room for what a ConfigMap adds.
const revisionRecordMaxRead = RevisionRecordMaxBytes + 4096

func decodeRevisionRecord(cm *unstructured.Unstructured, release, ns string) (*RevisionRecord, error) {
	data, _, _ := unstructured.NestedString(cm.Object, "data", revisionRecordDataKey)
	if data == "" {
		return nil, errors.New("no " + revisionRecordDataKey)
	}
	if len(data) > revisionRecordMaxRead {
		return nil, fmt.Errorf("%d bytes, over the bound of %d", len(data), revisionRecordMaxRead)
	}
	var rec RevisionRecord
	if err := json.Unmarshal([]byte(data), &rec); err != nil {
		return nil, fmt.Errorf("not a revision record: %w", err)
	}
	switch {
	case rec.APIVersion != RevisionRecordAPIVersion:
		return nil, fmt.Errorf("apiVersion %q, want %s", rec.APIVersion, RevisionRecordAPIVersion)
	case rec.Release != release || rec.Namespace != ns:
		return nil, fmt.Errorf("it is of release %q in namespace %s", rec.Release, rec.Namespace)
	case cm.GetName() != RevisionRecordName(release, rec.Revision):
		return nil, fmt.Errorf("it names revision %d", rec.Revision)
	}
	return &rec, nil
}

// PruneRevisionRecords deletes the records of release in ns whose revision
// Helm no longer keeps (keep false: --history-max pruned it, or an
// uninstall removed the history), as Helm prunes its own; it returns the
// revisions deleted.
func PruneRevisionRecords(ctx context.Context, dyn dynamic.Interface, ns, release string, keep func(revision int) bool) ([]int, error) {
	recs, _, err := ListRevisionRecords(ctx, dyn, ns, release)
	if err != nil {
		return nil, err
	}
	var gone []int
	for rev := range recs {
		if !keep(rev) {
			gone = append(gone, rev)
		}
	}
	sort.Ints(gone)
	client := dyn.Resource(configMaps).Namespace(ns)
	for _, rev := range gone {
		name := RevisionRecordName(release, rev)
		if err := client.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("pruning the revision record ConfigMap %s/%s: %w", ns, name, err)
		}
	}
	return gone, nil
}
