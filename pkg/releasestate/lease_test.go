package releasestate

import (
	"context"
	"errors"
	"os"
	"os/exec"
	goruntime "runtime"
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
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/injection"
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

// forgedLease puts in the fake cluster a Lease of the release as anyone
// who may write Leases can: holder, renewTime and duration as given, last
// written by manager at writtenAt.
func forgedLease(t *testing.T, fc *fakeCluster, holder, renew string, duration int64, manager string, writtenAt time.Time) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
		"metadata": map[string]interface{}{"name": LeaseName(relName), "namespace": relNS, "resourceVersion": "1"},
		"spec":     map[string]interface{}{"holderIdentity": holder, "renewTime": renew, "leaseDurationSeconds": duration},
	}}
	at := metav1.NewTime(writtenAt)
	obj.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "helm-safe-upgrade", Operation: metav1.ManagedFieldsOperationUpdate, Time: &metav1.Time{Time: writtenAt.Add(-time.Hour)}},
		{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Time: &at},
	})
	if err := fc.client.Tracker().Create(live.LeasesGVR, obj, relNS); err != nil {
		t.Fatal(err)
	}
}

// TestLeaseMalformed (issue 40): a Lease whose renewTime is in the future
// or whose duration is longer than the tool writes cannot be trusted to
// end: an apply is refused saying it is malformed, who last wrote it and
// the command that removes it, its holder text escaped and bounded; a
// dry-run notes the same; never "wait until it ends", never a negative
// duration.
func TestLeaseMalformed(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	hostile := "mallory\x1b]0;pwned\x07\n\rError: forged " + strings.Repeat("h", 3000)
	tests := []struct {
		name, renew string
		duration    int64
		says        string
	}{
		{"year 9999 and 2^31-1 seconds", "9999-12-31T23:59:59.000000Z", 1<<31 - 1,
			"its renewTime 9999-12-31T23:59:59Z is in the future, and its leaseDurationSeconds 2147483647 is more than the 30 this tool writes"},
		{"renewed in the future", now.Add(time.Hour).Format(metav1.RFC3339Micro), 30, "its renewTime 2026-12-03T09:00:00Z is in the future"},
		{"a duration longer than the tool writes", now.Format(metav1.RFC3339Micro), 3600, "its leaseDurationSeconds 3600 is more than the 30 this tool writes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeCluster(t)
			forgedLease(t, fc, hostile, tt.renew, tt.duration, "kubectl\x1b[2J-edit", now.Add(-time.Minute))
			_, err := observeLease(ctx, fc.Cluster, relName, relNS, true, now, host{})
			var le *LeaseError
			if !errors.As(err, &le) {
				t.Fatalf("apply's read: %v, want refused", err)
			}
			dry, derr := observeLease(ctx, fc.Cluster, relName, relNS, false, now, host{})
			if derr != nil {
				t.Fatal(derr)
			}
			for what, text := range map[string]string{"error": err.Error(), "note": dry.Note()} {
				for _, want := range []string{"the Lease demo/safe-upgrade.app is malformed: " + tt.says,
					`last written by "kubectl\x1b[2J-edit" (Update) at 2026-12-03T07:59:00Z`, "kubectl delete lease -n demo safe-upgrade.app",
					`mallory\x1b]0;pwned\a\n\rError: forged hhh`, "…[+"} {
					if !strings.Contains(text, want) {
						t.Errorf("%s does not say %q:\n%.600s", what, want, text)
					}
				}
				if bad := injection.Unsafe(text); bad != "" || len(text) > 1500 || strings.Contains(text, "wait until it ends") || strings.Contains(text, "-2562047h") {
					t.Errorf("%s (%d bytes, %s):\n%.600q", what, len(text), bad, text)
				}
			}
		})
	}
}

// TestLeaseRenewedAheadWithinSkew: a renewTime a few seconds ahead (another
// machine's clock) is trusted, and no duration printed is negative.
func TestLeaseRenewedAheadWithinSkew(t *testing.T) {
	now := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	fc := newFakeCluster(t)
	forgedLease(t, fc, "admin on other (pid 7, run 0a0b0c0d)", now.Add(5*time.Second).Format(metav1.RFC3339Micro), 30, "helm-safe-upgrade", now)
	_, err := observeLease(context.Background(), fc.Cluster, relName, relNS, true, now, host{})
	var le *LeaseError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "renewed 0s ago; stale if not renewed within 35s") || strings.Contains(err.Error(), "malformed") {
		t.Errorf("read: %v", err)
	}
}

// TestLeaseHolderGone (issue 39): a lease whose holder ran on this host in
// a process that no longer runs says so and when it is stale, rather than
// "an apply is running"; on another host, or with the process alive, it is
// an apply running.
func TestLeaseHolderGone(t *testing.T) {
	now := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	renewed := now.Add(-10 * time.Second).Format(metav1.RFC3339Micro)
	dead := func(int) bool { return false }
	alive := func(int) bool { return true }
	tests := []struct {
		name   string
		holder string
		here   host
		gone   bool
	}{
		{"killed on this host", "admin on vm (pid 4242, run 01020304)", host{"vm", dead}, true},
		{"running on this host", "admin on vm (pid 4242, run 01020304)", host{"vm", alive}, false},
		{"on another host", "admin on ci-7 (pid 4242, run 01020304)", host{"vm", dead}, false},
		{"not the tool's identity", "vm (pid 4242)", host{"vm", dead}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeCluster(t)
			forgedLease(t, fc, tt.holder, renewed, 30, "helm-safe-upgrade", now)
			_, err := observeLease(context.Background(), fc.Cluster, relName, relNS, true, now, tt.here)
			dry, derr := observeLease(context.Background(), fc.Cluster, relName, relNS, false, now, tt.here)
			if err == nil || derr != nil {
				t.Fatalf("apply's read: %v, dry-run's: %v", err, derr)
			}
			for what, text := range map[string]string{"error": err.Error(), "note": dry.Note()} {
				says := strings.Contains(text, "whose process ran on this host and no longer runs") && strings.Contains(text, "stale in 20s (at 2026-12-03T08:00:20Z)") && strings.Contains(text, "--recover")
				running := strings.Contains(text, "being applied by") || strings.Contains(text, "an apply of this release is running")
				if says != tt.gone || running == tt.gone {
					t.Errorf("%s: %s", what, text)
				}
			}
		})
	}
}

func TestProcessRunning(t *testing.T) {
	if goruntime.GOOS == "windows" {
		t.Skip("on Windows a holder is never said to be gone (process_windows.go)")
	}
	if !processRunning(os.Getpid()) {
		t.Error("this process is not running")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if processRunning(cmd.Process.Pid) {
		t.Errorf("process %d, ended and waited for, runs", cmd.Process.Pid)
	}
}

// TestHeldLeaseUpdateRetriesConflicts: a write of the held lease that
// conflicts (the object changed since this run read it) is retried on the
// lease read again, a bounded number of times; a lease another run took
// over meanwhile is left alone.
func TestHeldLeaseUpdateRetriesConflicts(t *testing.T) {
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		conflicts int  // updates refused with a conflict before one passes
		takenOver bool // another run took the lease before the release
		updates   int
		fails     bool
		holder    string // the lease's holder after the release
	}{
		{name: "no conflict", updates: 1},
		{name: "two conflicts", conflicts: 2, updates: 3},
		{name: "always conflicting", conflicts: 100, updates: 5, fails: true, holder: "run-a"},
		{name: "taken over meanwhile", takenOver: true, updates: 1, holder: "run-x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			fc := newFakeCluster(t)
			allowLeases(fc)
			leasesWithVersions(fc)
			obs, err := ObserveLease(ctx, fc.Cluster, relName, relNS, true, now)
			if err != nil {
				t.Fatal(err)
			}
			held, err := TakeLease(ctx, fc.Cluster, obs, leaseRequest("run-a", now))
			if err != nil {
				t.Fatal(err)
			}
			res := fc.client.Resource(live.LeasesGVR).Namespace(relNS)
			if tt.takenOver {
				// Written through the versioned fake: the held copy is stale.
				cur, err := res.Get(ctx, LeaseName(relName), metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				_ = unstructured.SetNestedField(cur.Object, "run-x", "spec", "holderIdentity")
				if _, err := res.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			updates := 0
			fc.client.PrependReactor("update", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
				updates++
				if updates <= tt.conflicts {
					return true, nil, apierrors.NewConflict(live.LeasesGVR.GroupResource(), LeaseName(relName), errors.New("the object has been modified"))
				}
				return false, nil, nil
			})
			err = held.Release()
			if (err != nil) != tt.fails || (tt.fails && !strings.Contains(err.Error(), "conflicts")) {
				t.Fatalf("release: %v, want failure %v", err, tt.fails)
			}
			if updates != tt.updates {
				t.Errorf("%d updates, want %d", updates, tt.updates)
			}
			got, err := res.Get(ctx, LeaseName(relName), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if h, _, _ := unstructured.NestedString(got.Object, "spec", "holderIdentity"); h != tt.holder {
				t.Errorf("holder after the release %q, want %q", h, tt.holder)
			}
		})
	}
}

// TestLeaseLifecycle: the one lifecycle of the writing verbs. AcquireLease
// without a read before a plan reads now and refuses a lease another run
// holds; End releases (the next run takes it at once), unless the API
// server did not answer, when the lease is only no longer renewed: still
// held, stale after LeaseDuration, and End says so.
func TestLeaseLifecycle(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	fc := newFakeCluster(t)
	allowLeases(fc)
	leasesWithVersions(fc)

	held, err := AcquireLease(ctx, fc.Cluster, relName, relNS, nil, leaseRequest("run-a", now))
	if err != nil || held == nil {
		t.Fatalf("acquire without an earlier read: %v, %v", held, err)
	}
	var le *LeaseError
	if _, err := AcquireLease(ctx, fc.Cluster, relName, relNS, nil, leaseRequest("run-b", now)); !errors.As(err, &le) || le.Since || !strings.Contains(err.Error(), "is being applied by run-a") {
		t.Fatalf("acquire while run-a holds it: %v, want a *LeaseError naming run-a", err)
	}
	if err := held.End(false); err != nil {
		t.Fatalf("end: %v", err)
	}
	heldB, err := AcquireLease(ctx, fc.Cluster, relName, relNS, nil, leaseRequest("run-b", now))
	if err != nil {
		t.Fatalf("acquire once run-a ended: %v", err)
	}
	err = heldB.End(true)
	if err == nil || !strings.Contains(err.Error(), "not released; it is stale in "+LeaseDuration.String()) {
		t.Errorf("end, unanswered: %v, want it to say the lease is not released", err)
	}
	if _, err := AcquireLease(ctx, fc.Cluster, relName, relNS, nil, leaseRequest("run-c", now.Add(time.Second))); !errors.As(err, &le) || !strings.Contains(err.Error(), "run-b") {
		t.Errorf("acquire after an unanswered end: %v, want refused naming run-b (not released)", err)
	}
	heldC, err := AcquireLease(ctx, fc.Cluster, relName, relNS, nil, leaseRequest("run-c", now.Add(LeaseDuration+time.Second)))
	if err != nil {
		t.Errorf("acquire once the unreleased lease is stale: %v", err)
	}
	if err := heldC.End(false); err != nil {
		t.Errorf("end: %v", err)
	}
	var none *HeldLease
	if err := none.End(true); err != nil {
		t.Errorf("end of no lease: %v", err)
	}
}
