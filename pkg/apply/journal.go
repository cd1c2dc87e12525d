package apply

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
)

// The recreate's write-ahead journal (its stored form and reading are
// releasestate's): apply writes it before the first delete, and restores
// from it after a failure or a kill.

// journalObject is one object the recreate deletes.
type journalObject = releasestate.JournalObject

// restoreManager is the field manager of the create that restores an
// object: until its previous managers are put back, it marks the object as
// one a restore created (not Helm's upgrade or rollback).
const restoreManager = "helm-safe-upgrade-restore"

// journal is the journal Secret of one release.
type journal struct {
	secrets dynamic.ResourceInterface
	rec     releasestate.JournalRecord
	// written is set once the Secret exists.
	written bool
}

// newJournal records the live objects of targets; nothing is written yet.
func newJournal(secrets dynamic.ResourceInterface, release, namespace string, revision int, manifest string, targets []*recreateTarget) *journal {
	j := &journal{secrets: secrets, rec: releasestate.JournalRecord{Release: release, Namespace: namespace, Revision: revision,
		ManifestDigest: releasestate.JournalDigest(manifest), Step: releasestate.StepDeleting, Started: time.Now().UTC().Truncate(time.Second)}}
	for _, t := range targets {
		if t.live == nil {
			continue
		}
		j.rec.Objects = append(j.rec.Objects, journalObject{APIVersion: t.live.GetAPIVersion(), Kind: t.live.GetKind(),
			Namespace: t.live.GetNamespace(), Name: t.live.GetName(), UID: t.live.GetUID(), Object: restorable(t.live),
			ManagedFields: t.live.GetManagedFields()})
	}
	return j
}

// restorable is obj without what the API server sets or refuses on create.
// Owner references, labels, annotations, finalizers and the whole spec are
// kept, so the restored object is the old one and adopts what it orphaned.
func restorable(obj *unstructured.Unstructured) map[string]interface{} {
	c := obj.DeepCopy()
	for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields",
		"deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(c.Object, "status")
	var fin []string
	for _, f := range c.GetFinalizers() {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			fin = append(fin, f)
		}
	}
	c.SetFinalizers(fin)
	if c.GetKind() == "Job" && c.GroupVersionKind().Group == "batch" {
		if manual, _, _ := unstructured.NestedBool(c.Object, "spec", "manualSelector"); !manual {
			// The server generates the selector and these labels from the
			// new Job's UID; the old ones would not validate.
			unstructured.RemoveNestedField(c.Object, "spec", "selector")
			for _, path := range [][]string{{"metadata", "labels"}, {"spec", "template", "metadata", "labels"}} {
				for _, l := range []string{"controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name"} {
					unstructured.RemoveNestedField(c.Object, append(path, l)...)
				}
			}
		}
	}
	return c.Object
}

// save writes the journal (creates it the first time).
func (j *journal) save(ctx context.Context) error {
	s, err := j.rec.Secret()
	if err != nil {
		return err
	}
	if !j.written {
		if _, err := j.secrets.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("writing the recreate journal Secret %s/%s: %w", j.rec.Namespace, s.GetName(), err)
		}
		j.written = true
		return nil
	}
	if _, err := j.secrets.Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating the recreate journal Secret %s/%s (step %s): %w", j.rec.Namespace, s.GetName(), j.rec.Step, err)
	}
	return nil
}

// remove deletes the journal Secret.
func (j *journal) remove(ctx context.Context) error {
	err := j.secrets.Delete(ctx, releasestate.JournalName(j.rec.Release), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the recreate journal Secret %s/%s: %w", j.rec.Namespace, releasestate.JournalName(j.rec.Release), err)
	}
	j.written = false
	return nil
}

// readJournal returns the journal of release in ns (releasestate's
// ReadJournal), nil when there is none, ready to be updated or removed.
func readJournal(ctx context.Context, cluster *live.Cluster, ns, release string) (*journal, error) {
	rec, err := releasestate.ReadJournal(ctx, cluster, ns, release)
	if rec == nil || err != nil {
		return nil, err
	}
	return &journal{secrets: cluster.Dynamic.Resource(live.SecretsGVR).Namespace(ns), rec: *rec, written: true}, nil
}

// survey says, from a fresh read of each object, what restore will do,
// one line per object, and what of each stored object the chart does not
// set but the restore keeps.
func (j *journal) survey(ctx context.Context, cluster *live.Cluster, deployed *manifest.Set) (string, error) {
	var b strings.Builder
	for i := range j.rec.Objects {
		o := &j.rec.Objects[i]
		res, _, err := cluster.Resource(schema.FromAPIVersionAndKind(o.APIVersion, o.Kind), o.Namespace)
		if err != nil {
			return "", fmt.Errorf("%s: %w", o.ID(), err)
		}
		// Read on the client the restore then writes with.
		cur, err := res.Get(ctx, o.Name, metav1.GetOptions{})
		var what string
		switch {
		case apierrors.IsNotFound(err):
			what = fmt.Sprintf("re-create it with its previous spec (it had uid %s)", o.UID)
		case err != nil:
			return "", fmt.Errorf("%s: reading it: %w", o.ID(), err)
		case cur.GetUID() == o.UID && cur.GetDeletionTimestamp() != nil:
			what = "re-create it with its previous spec once its deletion finishes"
		case cur.GetUID() == o.UID:
			what = "leave it as it is: it was not deleted"
		case restoredByUs(o, cur):
			what = fmt.Sprintf("finish the restore that re-created it (uid %s): put its previous field managers back", cur.GetUID())
		default:
			what = fmt.Sprintf("leave it as it is: it was created again since, by Helm's upgrade or rollback (uid %s)", cur.GetUID())
		}
		fmt.Fprintf(&b, "  - %s: %s\n", o.ID(), what)
		stored := &unstructured.Unstructured{Object: o.Object}
		stored = stored.DeepCopy()
		stored.SetManagedFields(o.ManagedFields)
		var want *unstructured.Unstructured
		if d := deployed.Get(o.ID()); d != nil {
			want = d.Obj
		}
		if kept := keptFields(stored, want); len(kept) > 0 {
			fmt.Fprintf(&b, "      kept as they were, not set by the chart: %s\n", strings.Join(kept, ", "))
		}
	}
	return b.String(), nil
}

// restore puts back every journal object that is not in the cluster any
// more, with its old spec (its orphaned pods and claims are adopted again),
// and says, per object, what it did; deleted names the objects found
// deleted (gone, being deleted, or replaced), decided from what the server
// answers now, never from the journal's marks alone. An object still there
// with its old UID was not deleted (or its deletion is still finishing:
// restore waits for it up to timeout); one there with another UID was
// created since: by an earlier restore (its field managers are put back if
// that restore was cut short) or by Helm's upgrade or its --atomic
// rollback (left as it is). The error lists the objects it could not
// restore.
func (j *journal) restore(ctx context.Context, cluster *live.Cluster, poll, timeout time.Duration) (msg string, deleted []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var done, failed []string
	for i := range j.rec.Objects {
		o := &j.rec.Objects[i]
		what, gone, err := j.restoreOne(ctx, cluster, o, poll)
		if gone || (err != nil && o.Deleted) {
			deleted = append(deleted, o.ID().String())
		}
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", o.ID(), err))
			continue
		}
		done = append(done, o.ID().String()+" "+what)
	}
	msg = "restored from the recreate journal: " + strings.Join(done, "; ")
	if len(done) == 0 {
		msg = ""
	}
	if len(failed) > 0 {
		return msg, deleted, fmt.Errorf("could not restore %s; the journal Secret %s/%s is kept: run again with --recover",
			strings.Join(failed, "; "), j.rec.Namespace, releasestate.JournalName(j.rec.Release))
	}
	return msg, deleted, nil
}

// restoreManagers puts the field managers an object had before its
// recreate back on the re-created object (an update whose managedFields are
// set replaces them, and it changes nothing else, so no new entry is
// added), reading it again and retrying (client-go's default backoff) when
// a controller updated the object meanwhile.
func restoreManagers(ctx context.Context, res dynamic.ResourceInterface, obj *unstructured.Unstructured, managers []metav1.ManagedFieldsEntry) error {
	if len(managers) == 0 {
		return nil
	}
	stale := false
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if stale {
			// A read inside the retry of a write: it stays on the writing client.
			cur, err := res.Get(ctx, obj.GetName(), metav1.GetOptions{})
			if err != nil {
				return err
			}
			obj = cur
		}
		stale = true
		obj.SetManagedFields(managers)
		_, err := res.Update(ctx, obj, metav1.UpdateOptions{})
		return err
	})
}

// restoredByUs reports whether cur, an object with another UID than o's,
// was created by a restore of o: the journal recorded its UID, or the
// restore's own field manager is still on it (a kill came before its
// previous managers were put back, or before the journal was updated).
func restoredByUs(o *journalObject, cur *unstructured.Unstructured) bool {
	if o.Restored != "" && cur.GetUID() == o.Restored {
		return true
	}
	return hasManager(cur, restoreManager)
}

// restoreOne restores o and says what it did; gone says that o's object
// was found deleted (decided from the server's answers).
func (j *journal) restoreOne(ctx context.Context, cluster *live.Cluster, o *journalObject, poll time.Duration) (what string, gone bool, err error) {
	gvk := schema.FromAPIVersionAndKind(o.APIVersion, o.Kind)
	res, _, err := cluster.Resource(gvk, o.Namespace)
	if err != nil {
		return "", false, err
	}
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	for {
		// Polls the restore's own write: it stays on the writing client.
		cur, err := res.Get(ctx, o.Name, metav1.GetOptions{})
		switch {
		case err == nil && cur.GetUID() != o.UID && restoredByUs(o, cur):
			note := ""
			if hasManager(cur, restoreManager) && len(o.ManagedFields) > 0 {
				if err := restoreManagers(ctx, res, cur, o.ManagedFields); err != nil {
					note = fmt.Sprintf(", but not its field managers (%v)", err)
				} else {
					note = ", its previous field managers put back"
				}
			}
			return fmt.Sprintf("re-created with its previous spec by an earlier restore (uid %s)%s", cur.GetUID(), note), true, nil
		case err == nil && cur.GetUID() != o.UID:
			return fmt.Sprintf("was created again since, by Helm's upgrade or rollback (uid %s), left as it is", cur.GetUID()), true, nil
		case err == nil && cur.GetDeletionTimestamp() == nil:
			return "was not deleted", false, nil
		case apierrors.IsNotFound(err):
			obj := &unstructured.Unstructured{Object: o.Object}
			create := metav1.CreateOptions{FieldManager: restoreManager}
			created, err := res.Create(ctx, obj, create)
			note := ""
			if apierrors.IsInvalid(err) && o.Kind == "Service" && o.APIVersion == "v1" {
				// Its cluster IP or node ports were taken meanwhile: let
				// the server allocate new ones.
				created, err = res.Create(ctx, withoutAllocations(o.Object), create)
				note = ", with a new cluster IP and node ports (the old ones were taken)"
			}
			if apierrors.IsAlreadyExists(err) {
				continue // created meanwhile: look again
			}
			if err != nil {
				return "", true, fmt.Errorf("creating it again: %w", err)
			}
			o.Restored = created.GetUID()
			if err := j.save(ctx); err != nil {
				note += fmt.Sprintf(" (the journal could not record it: %v)", err)
			}
			if err := restoreManagers(ctx, res, created, o.ManagedFields); err != nil {
				note += fmt.Sprintf(", but not its field managers (%v)", err)
			}
			return fmt.Sprintf("re-created with its previous spec%s (uid %s)", note, created.GetUID()), true, nil
		case err != nil && ctx.Err() == nil:
			return "", false, fmt.Errorf("reading it: %w", err)
		case err == nil:
			gone = true // its deletion was accepted and is finishing
		}
		// Its deletion is still finishing (finalizers): wait.
		select {
		case <-ctx.Done():
			return "", gone, fmt.Errorf("still being deleted, not re-created: %w", ctx.Err())
		case <-ticker.C:
		}
	}
}

func hasManager(obj *unstructured.Unstructured, manager string) bool {
	for _, m := range obj.GetManagedFields() {
		if m.Manager == manager {
			return true
		}
	}
	return false
}

// withoutAllocations is a Service without the cluster IPs (unless headless)
// and node ports the server allocated to the old one.
func withoutAllocations(svc map[string]interface{}) *unstructured.Unstructured {
	u := (&unstructured.Unstructured{Object: svc}).DeepCopy()
	if ip, _, _ := unstructured.NestedString(u.Object, "spec", "clusterIP"); ip != "None" {
		unstructured.RemoveNestedField(u.Object, "spec", "clusterIP")
		unstructured.RemoveNestedField(u.Object, "spec", "clusterIPs")
	}
	unstructured.RemoveNestedField(u.Object, "spec", "healthCheckNodePort")
	ports, _, _ := unstructured.NestedSlice(u.Object, "spec", "ports")
	for _, p := range ports {
		if m, ok := p.(map[string]interface{}); ok {
			delete(m, "nodePort")
		}
	}
	if ports != nil {
		_ = unstructured.SetNestedSlice(u.Object, ports, "spec", "ports")
	}
	return u
}
