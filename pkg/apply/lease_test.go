package apply

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
)

// allowLeases answers the access reviews of the fake cluster: every verb
// but those denied.
func allowLeases(fc *fakeCluster, denied ...string) {
	fc.client.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		review := a.(clienttesting.CreateActionImpl).GetObject().(*unstructured.Unstructured).DeepCopy()
		verb, _, _ := unstructured.NestedString(review.Object, "spec", "resourceAttributes", "verb")
		allowed := true
		for _, d := range denied {
			allowed = allowed && d != verb
		}
		_ = unstructured.SetNestedField(review.Object, allowed, "status", "allowed")
		return true, review, nil
	})
}

// leasesWithVersions makes the fake cluster keep Leases as the API server
// does: each write gets a new resourceVersion, and an update with another
// than the current one conflicts.
func leasesWithVersions(fc *fakeCluster) {
	tracker := fc.client.Tracker()
	version := 0
	fc.client.PrependReactor("*", "leases", func(a clienttesting.Action) (bool, runtime.Object, error) {
		var obj *unstructured.Unstructured
		switch a := a.(type) {
		case clienttesting.CreateActionImpl:
			obj = a.GetObject().(*unstructured.Unstructured).DeepCopy()
		case clienttesting.UpdateActionImpl:
			obj = a.GetObject().(*unstructured.Unstructured).DeepCopy()
			cur, err := tracker.Get(live.LeasesGVR, relNS, obj.GetName())
			if err != nil {
				return true, nil, err
			}
			if cur.(*unstructured.Unstructured).GetResourceVersion() != obj.GetResourceVersion() {
				return true, nil, apierrors.NewConflict(live.LeasesGVR.GroupResource(), obj.GetName(), errors.New("the object has been modified"))
			}
		default:
			return false, nil, nil
		}
		version++
		obj.SetResourceVersion(strconv.Itoa(version))
		var err error
		if _, ok := a.(clienttesting.CreateActionImpl); ok {
			err = tracker.Create(live.LeasesGVR, obj, relNS)
		} else {
			err = tracker.Update(live.LeasesGVR, obj, relNS)
		}
		return true, obj, err
	})
}

func leaseRequest(identity string, now time.Time) LeaseRequest {
	return LeaseRequest{Identity: identity, User: "admin", Command: "helm safe-upgrade app ./chart --set", Now: func() time.Time { return now }}
}

// TestLease: a run takes the lease it read free; a second run that read it
// before refuses, naming the first; while held, an apply's read refuses and
// a dry-run's notes it; released, it can be taken again; a lease not renewed
// for its duration is taken over.
func TestLease(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	fc := newFakeCluster(t)
	allowLeases(fc)
	leasesWithVersions(fc)

	a, err := ObserveLease(ctx, fc.Cluster, relName, relNS, true, now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ObserveLease(ctx, fc.Cluster, relName, relNS, true, now)
	if err != nil {
		t.Fatal(err)
	}
	held, err := TakeLease(ctx, fc.Cluster, a, leaseRequest("run-a", now))
	if err != nil {
		t.Fatalf("first take: %v", err)
	}
	_, err = TakeLease(ctx, fc.Cluster, b, leaseRequest("run-b", now))
	var le *LeaseError
	if !errors.As(err, &le) || !le.Since || !strings.Contains(err.Error(), "is being applied by run-a running \"helm safe-upgrade app ./chart --set\"") {
		t.Fatalf("second take: %v, want a *LeaseError naming run-a", err)
	}

	_, err = ObserveLease(ctx, fc.Cluster, relName, relNS, true, now.Add(time.Second))
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "nothing was written: wait until it ends") {
		t.Errorf("apply's read of a held lease: %v", err)
	}
	plan, err := ObserveLease(ctx, fc.Cluster, relName, relNS, false, now.Add(time.Second))
	if err != nil || !strings.Contains(plan.Note(), "is held by run-a") {
		t.Errorf("dry-run's read of a held lease: %v %q", err, plan.Note())
	}

	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	if err := held.Release(); err != nil {
		t.Errorf("second release: %v", err)
	}
	_, err = TakeLease(ctx, fc.Cluster, b, leaseRequest("run-b", now))
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "another run (run-a running") || !strings.Contains(err.Error(), "while this run planned; nothing was written: plan again") {
		t.Errorf("take after another run took and released it since the read: %v", err)
	}
	c, err := ObserveLease(ctx, fc.Cluster, relName, relNS, true, now)
	if err != nil || c.Note() != "" {
		t.Fatalf("read of a released lease: %v %q", err, c.Note())
	}
	c2, err := ObserveLease(ctx, fc.Cluster, relName, relNS, true, now)
	if err != nil {
		t.Fatal(err)
	}
	heldC, err := TakeLease(ctx, fc.Cluster, c, leaseRequest("run-c", now))
	if err != nil {
		t.Fatalf("take of a released lease: %v", err)
	}
	if _, err := TakeLease(ctx, fc.Cluster, c2, leaseRequest("run-c2", now)); !errors.As(err, &le) || !strings.Contains(err.Error(), "run-c ") {
		t.Errorf("take of the released lease another run took since the read: %v, want refused naming run-c", err)
	}
	close(heldC.stop) // as if killed: no renewal, no release
	<-heldC.done

	_, err = ObserveLease(ctx, fc.Cluster, relName, relNS, true, now.Add(LeaseDuration-time.Second))
	if !errors.As(err, &le) {
		t.Errorf("read before the lease is stale: %v, want refused", err)
	}
	later := now.Add(LeaseDuration + time.Second)
	d, err := ObserveLease(ctx, fc.Cluster, relName, relNS, true, later)
	if err != nil {
		t.Fatalf("read of a stale lease: %v", err)
	}
	heldD, err := TakeLease(ctx, fc.Cluster, d, leaseRequest("run-d", later))
	if err != nil {
		t.Fatalf("take over of a stale lease: %v", err)
	}
	defer heldD.Release() //nolint:errcheck // the fake answers
	got, err := fc.client.Resource(live.LeasesGVR).Namespace(relNS).Get(ctx, LeaseName(relName), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := holderOf(got); h.Identity != "run-d" || h.User != "admin" || h.Command == "" || !h.Started.Equal(later) {
		t.Errorf("holder %+v", h)
	}
	if n, _, _ := unstructured.NestedInt64(got.Object, "spec", "leaseTransitions"); n != 3 {
		t.Errorf("leaseTransitions %d, want 3", n)
	}
}

// TestLeasePermissions: without the right to take the lease, an apply is
// refused before any write, naming the verbs missing; reading the lease
// (before the plan) sends no review and no write.
func TestLeasePermissions(t *testing.T) {
	ctx := context.Background()
	fc := newFakeCluster(t)
	allowLeases(fc, "create", "update")
	obs, err := ObserveLease(ctx, fc.Cluster, relName, relNS, true, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range fc.client.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("reading the lease sent %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	_, err = TakeLease(ctx, fc.Cluster, obs, leaseRequest("run-a", time.Now()))
	var pe *LeasePermissionError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "you may not create, update leases (coordination.k8s.io) in namespace demo") {
		t.Fatalf("take: %v", err)
	}
	for _, a := range fc.client.Actions() {
		if a.GetVerb() != "get" && a.GetResource().Resource != "selfsubjectaccessreviews" {
			t.Errorf("the refused apply sent %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}
