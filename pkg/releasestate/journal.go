package releasestate

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

// The write-ahead journal of a recreate: a Secret in the release namespace,
// written before the first delete, holding every live object the recreate
// deletes (as it was, minus what the server sets), so that a failure or a
// kill at any later point can put them back. This file is its stored form
// and its reading; apply writes it and restores from it.
const (
	// JournalType is the Secret type of a journal.
	JournalType = "helm-safe-upgrade.io/journal"
	// JournalReleaseLabel labels a journal (and a Lease) with its
	// release's name.
	JournalReleaseLabel = "helm-safe-upgrade.io/release"
	journalKey          = "journal.json"
	journalManagedBy    = "helm-safe-upgrade"
)

// JournalName is the name of the journal Secret of a release.
func JournalName(release string) string { return "safe-upgrade-journal." + release }

// Step is how far an apply with recreates got.
type Step string

// Steps, in order. The journal is removed once the revision is deployed.
const (
	// StepDeleting: written before the first delete; each object is marked
	// Deleted once its delete was accepted.
	StepDeleting Step = "deleting"
	// StepUpgrading: every object is gone; Helm's upgrade runs.
	StepUpgrading Step = "upgrading"
	// StepRestoring: the apply failed; the objects are being put back.
	StepRestoring Step = "restoring"
)

// JournalObject is one object the recreate deletes.
type JournalObject struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Namespace  string    `json:"namespace,omitempty"`
	Name       string    `json:"name"`
	UID        types.UID `json:"uid"`
	// Deleted is set once the delete was accepted (a kill between the
	// delete and this mark leaves it false: restore looks at the cluster).
	Deleted bool `json:"deleted"`
	// Object is the live object as it was, ready to be created again.
	Object map[string]interface{} `json:"object"`
	// ManagedFields are its field managers as they were: a create makes
	// the restoring client own every field, so they are put back after it.
	// Helm 4's server-side apply conflicts with any other owner of a field
	// the chart sets (empty in a journal written before they were kept).
	ManagedFields []metav1.ManagedFieldsEntry `json:"managedFields,omitempty"`
	// Restored is the UID of the object a restore created, once known: a
	// kill before its field managers were put back leaves it to --recover
	// to finish (which also knows it by its restore manager entry).
	Restored types.UID `json:"restored,omitempty"`
}

// ID is the object's ID, printed as everywhere (manifest.ObjectID.String).
func (o *JournalObject) ID() manifest.ObjectID {
	gv, _ := schema.ParseGroupVersion(o.APIVersion)
	return manifest.ObjectID{Group: gv.Group, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
}

// JournalRecord is what the journal Secret holds.
type JournalRecord struct {
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
	// Revision is the revision the apply creates; ManifestDigest the
	// digest of its planned manifest (JournalDigest).
	Revision       int       `json:"revision"`
	ManifestDigest string    `json:"manifestDigest"`
	Step           Step      `json:"step"`
	Started        time.Time `json:"started"`
	// WrittenBy is the user the apply ran as (SelfSubjectReview), as the
	// journal says: anyone who can write the Secret can write this too.
	WrittenBy string          `json:"writtenBy,omitempty"`
	Objects   []JournalObject `json:"objects"`
}

// Secret is the journal Secret holding r, as apply writes it (creates it,
// then updates it at each step).
func (r *JournalRecord) Secret() (*unstructured.Unstructured, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	s := &unstructured.Unstructured{}
	s.SetAPIVersion("v1")
	s.SetKind("Secret")
	s.SetName(JournalName(r.Release))
	s.SetNamespace(r.Namespace)
	s.SetLabels(map[string]string{JournalReleaseLabel: r.Release, manifest.ManagedByLabel: journalManagedBy})
	s.Object["type"] = JournalType
	s.Object["stringData"] = map[string]interface{}{journalKey: string(data)}
	return s, nil
}

// ReadJournal returns the journal of release in ns, nil when there is none.
func ReadJournal(ctx context.Context, cluster *live.Cluster, ns, release string) (*JournalRecord, error) {
	s, err := cluster.Secret(ctx, ns, JournalName(release))
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the recreate journal Secret %s: %w", JournalName(release), err)
	}
	return journalOf(s)
}

// journalOf decodes the journal Secret s.
func journalOf(s *unstructured.Unstructured) (*JournalRecord, error) {
	if t, _, _ := unstructured.NestedString(s.Object, "type"); t != JournalType {
		return nil, fmt.Errorf("Secret %s/%s is not a recreate journal (type %q)", s.GetNamespace(), s.GetName(), t)
	}
	raw, _, _ := unstructured.NestedString(s.Object, "data", journalKey)
	if len(raw) > maxJournalBytes {
		return nil, fmt.Errorf("Secret %s/%s: the journal is %d bytes, more than a journal can be (%d): not a journal this tool wrote", s.GetNamespace(), s.GetName(), len(raw), maxJournalBytes)
	}
	var data []byte
	if raw != "" {
		var err error
		if data, err = base64.StdEncoding.DecodeString(raw); err != nil {
			return nil, fmt.Errorf("Secret %s/%s: %w", s.GetNamespace(), s.GetName(), err)
		}
	} else { // a fake client keeps stringData as written
		str, _, _ := unstructured.NestedString(s.Object, "stringData", journalKey)
		data = []byte(str)
	}
	rec := &JournalRecord{}
	if err := json.Unmarshal(data, rec); err != nil {
		return nil, fmt.Errorf("Secret %s/%s: decoding the journal: %w", s.GetNamespace(), s.GetName(), err)
	}
	if err := rec.wellFormed(); err != nil {
		return nil, fmt.Errorf("Secret %s/%s: %w", s.GetNamespace(), s.GetName(), err)
	}
	return rec, nil
}

// maxJournalBytes is the most a journal's data can hold: a Secret's limit.
const maxJournalBytes = 1 << 20

// maxJournalObjects bounds what a journal may list: a release recreates a
// handful of objects; thousands are a forged or corrupt journal.
const maxJournalObjects = 500

// wellFormed checks what a journal read back says of itself: each entry's
// object is the one its header names (whether it may be restored is
// apply's checkRestorable's question).
func (r *JournalRecord) wellFormed() error {
	if len(r.Objects) > maxJournalObjects {
		return fmt.Errorf("the journal lists %d objects, more than %d: not a journal this tool wrote", len(r.Objects), maxJournalObjects)
	}
	for i := range r.Objects {
		o := &r.Objects[i]
		obj := &unstructured.Unstructured{Object: o.Object}
		if o.Object == nil || obj.GetAPIVersion() != o.APIVersion || obj.GetKind() != o.Kind || obj.GetName() != o.Name || obj.GetNamespace() != o.Namespace {
			return fmt.Errorf("journal entry %d (%s): its object is %s %s %s/%s, not the one the entry names", i+1, o.ID(),
				obj.GetAPIVersion(), obj.GetKind(), obj.GetNamespace(), obj.GetName())
		}
	}
	return nil
}

// refs names the journal's objects.
func (r *JournalRecord) refs() string {
	var out []string
	for i := range r.Objects {
		out = append(out, r.Objects[i].ID().String())
	}
	return strings.Join(out, ", ")
}

// Describe says what an interrupted apply left, for users.
func (r *JournalRecord) Describe() string {
	return fmt.Sprintf("an apply of revision %d started %s by %s was interrupted at step %q; the recreate journal (Secret %s/%s) holds %s, deleted or about to be deleted for recreation",
		r.Revision, r.Started.Format(time.RFC3339), r.Writer(), r.Step, r.Namespace, JournalName(r.Release), r.refs())
}

// Writer is the user the journal says wrote it.
func (r *JournalRecord) Writer() string {
	if r.WrittenBy == "" {
		return "an unknown user"
	}
	return fmt.Sprintf("%q", r.WrittenBy)
}

// JournalError says that an earlier apply of the release was interrupted
// after deleting objects for recreation: its journal is still there, and
// nothing may be planned or applied until --recover resolved it.
type JournalError struct {
	Name, Namespace string
	Journal         *JournalRecord
}

func (e *JournalError) Error() string {
	return fmt.Sprintf("release %q in namespace %s: %s; nothing was planned or written: run this command again with --recover to restore them and settle the release",
		e.Name, e.Namespace, e.Journal.Describe())
}

// CheckJournal returns a *JournalError when an interrupted apply left the
// recreate journal of release name in namespace ns; every run (plan or
// apply) calls it first, so nothing is planned against a cluster missing
// the objects that apply deleted.
func CheckJournal(ctx context.Context, cluster *live.Cluster, name, ns string) error {
	j, err := ReadJournal(ctx, cluster, ns, name)
	if err != nil {
		return fmt.Errorf("release %q in namespace %s: %w", name, ns, err)
	}
	if j != nil {
		return &JournalError{Name: name, Namespace: ns, Journal: j}
	}
	return nil
}
