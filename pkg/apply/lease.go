package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

// One apply (or --recover) of a release at a time: a coordination.k8s.io/v1
// Lease in the release namespace, held and renewed by the applying process.
// A run reads it before it plans (ObserveLease: a live lease held by another
// refuses the run) and takes it once the gate let the plan through
// (TakeLease), on condition that nobody took it since the read (the Lease's
// resourceVersion is the precondition): a run that gets it applies a plan
// computed while no other apply ran, and a blocked run writes nothing. The
// Lease is released (its holder cleared, the object kept, so the next run's
// precondition sees it moved) when the run ends.

// LeaseDuration is how long a lease lives without renewal; the holder
// renews it every third of it. A lease not renewed for that long is stale:
// its holder was killed, and the next run takes it over.
const LeaseDuration = 30 * time.Second

// Lease annotations: who holds it and what they run.
const (
	leaseUserAnnotation    = "helm-safe-upgrade.io/user"
	leaseCommandAnnotation = "helm-safe-upgrade.io/command"
	leaseStartedAnnotation = "helm-safe-upgrade.io/started"
	// leaseHolderAnnotation keeps the holder identity once released.
	leaseHolderAnnotation = "helm-safe-upgrade.io/holder"
)

// LeaseName is the name of the Lease of a release.
func LeaseName(release string) string { return "safe-upgrade." + release }

// LeaseObservation is the release's Lease as a run read it before planning.
type LeaseObservation struct {
	Release, Namespace string
	// obj is the Lease as read; nil when there was none.
	obj *unstructured.Unstructured
	// now is when it was read.
	now time.Time
}

// LeaseHolder says who holds (or last held) a release's Lease.
type LeaseHolder struct {
	Identity, User, Command string
	Started, Renewed        time.Time
	Duration                time.Duration
	// Released: the holder released the lease (Identity is the last one).
	Released bool
}

func holderOf(obj *unstructured.Unstructured) LeaseHolder {
	h := LeaseHolder{}
	if obj == nil {
		return h
	}
	h.Identity, _, _ = unstructured.NestedString(obj.Object, "spec", "holderIdentity")
	ann := obj.GetAnnotations()
	h.User, h.Command = ann[leaseUserAnnotation], ann[leaseCommandAnnotation]
	if h.Identity == "" {
		h.Identity, h.Released = ann[leaseHolderAnnotation], true
	}
	h.Started, _ = time.Parse(time.RFC3339, ann[leaseStartedAnnotation])
	if s, _, _ := unstructured.NestedString(obj.Object, "spec", "renewTime"); s != "" {
		h.Renewed, _ = time.Parse(metav1.RFC3339Micro, s)
	}
	if d, ok, _ := unstructured.NestedInt64(obj.Object, "spec", "leaseDurationSeconds"); ok {
		h.Duration = time.Duration(d) * time.Second
	}
	return h
}

// live reports whether the holder holds the lease at now: it has a holder
// renewed less than its duration ago.
func (h LeaseHolder) live(now time.Time) bool {
	return !h.Released && h.Identity != "" && now.Before(h.Renewed.Add(h.Duration))
}

func (h LeaseHolder) String() string {
	s := h.Identity
	if h.Command != "" {
		s += fmt.Sprintf(" running %q", h.Command)
	}
	if !h.Started.IsZero() {
		s += " since " + h.Started.UTC().Format(time.RFC3339)
	}
	return s
}

// Live returns the holder of a live lease held by someone, nil when the
// lease is free, released or stale.
func (o *LeaseObservation) Live() *LeaseHolder {
	if o == nil || o.obj == nil {
		return nil
	}
	h := holderOf(o.obj)
	if !h.live(o.now) {
		return nil
	}
	return &h
}

// Note is the plan's note about a live lease ("" when there is none).
func (o *LeaseObservation) Note() string {
	h := o.Live()
	if h == nil {
		return ""
	}
	return fmt.Sprintf("an apply of this release is running: the Lease %s/%s is held by %s; an apply now would be refused until it ends", o.Namespace, LeaseName(o.Release), h)
}

// LeaseError says that another run holds, or took since this run's plan,
// the release's Lease. Nothing was written.
type LeaseError struct {
	Release, Namespace string
	Holder             LeaseHolder
	// Since: the lease was taken after this run read it (and possibly
	// released already): the plan may have been computed while that run
	// was applying.
	Since bool
	// Now is when the lease was read.
	Now time.Time
}

func (e *LeaseError) Error() string {
	lease := fmt.Sprintf("Lease %s/%s", e.Namespace, LeaseName(e.Release))
	if e.Since && !e.Holder.live(e.Now) {
		return fmt.Sprintf("release %q in namespace %s: another run (%s) took the %s while this run planned; nothing was written: plan again",
			e.Release, e.Namespace, e.Holder, lease)
	}
	stale := e.Holder.Renewed.Add(e.Holder.Duration).Sub(e.Now).Round(time.Second)
	return fmt.Sprintf("release %q in namespace %s is being applied by %s (%s, renewed %s ago; stale if not renewed within %s); nothing was written: wait until it ends, then plan again",
		e.Release, e.Namespace, e.Holder, lease, e.Now.Sub(e.Holder.Renewed).Round(time.Second), stale)
}

// LeasePermissionError says which permission on Leases the user lacks.
type LeasePermissionError struct {
	Release, Namespace string
	Verbs              []string
}

func (e *LeasePermissionError) Error() string {
	return fmt.Sprintf("release %q in namespace %s: an apply takes the Lease %s/%s so that no other apply runs at the same time, but you may not %s leases (coordination.k8s.io) in namespace %s; nothing was written: ask for a Role granting get, create and update on leases.coordination.k8s.io there",
		e.Release, e.Namespace, e.Namespace, LeaseName(e.Release), strings.Join(e.Verbs, ", "), e.Namespace)
}

// ObserveLease reads the Lease of release in ns. With apply set, a lease
// held live by another run refuses the run (*LeaseError). A Lease the user
// may not read is no Lease here: an apply is refused when it takes it
// (TakeLease checks the permissions first), a dry-run only notes live ones.
// It sends no write (a blocked apply writes nothing, not even a review).
func ObserveLease(ctx context.Context, cluster *live.Cluster, release, ns string, apply bool, now time.Time) (*LeaseObservation, error) {
	o := &LeaseObservation{Release: release, Namespace: ns, now: now}
	obj, err := cluster.Lease(ctx, ns, LeaseName(release))
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err), apierrors.IsMethodNotSupported(err):
		return o, nil
	case err != nil:
		return nil, fmt.Errorf("release %q in namespace %s: reading its Lease %s: %w", release, ns, LeaseName(release), err)
	}
	o.obj = obj
	if apply {
		if h := o.Live(); h != nil {
			return nil, &LeaseError{Release: release, Namespace: ns, Holder: *h, Now: now}
		}
	}
	return o, nil
}

var selfSubjectAccessReviewsGVR = schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectaccessreviews"}

// checkLeaseAccess asks the API server whether the user may get, create and
// update Leases in ns (no write: a review is answered, not stored).
func checkLeaseAccess(ctx context.Context, dyn dynamic.Interface, release, ns string) error {
	var missing []string
	for _, verb := range []string{"get", "create", "update"} {
		review := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
			"spec": map[string]interface{}{"resourceAttributes": map[string]interface{}{
				"namespace": ns, "verb": verb, "group": live.LeasesGVR.Group, "resource": live.LeasesGVR.Resource, "name": LeaseName(release)}},
		}}
		got, err := dyn.Resource(selfSubjectAccessReviewsGVR).Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("release %q in namespace %s: asking whether you may %s its Lease: %w", release, ns, verb, err)
		}
		if ok, _, _ := unstructured.NestedBool(got.Object, "status", "allowed"); !ok {
			missing = append(missing, verb)
		}
	}
	if len(missing) > 0 {
		return &LeasePermissionError{Release: release, Namespace: ns, Verbs: missing}
	}
	return nil
}

// HeldLease is a Lease this run holds; Release ends it.
type HeldLease struct {
	res      dynamic.ResourceInterface
	identity string
	stop     chan struct{}
	done     chan struct{}
	log      func(string, ...interface{})

	mu  sync.Mutex
	obj *unstructured.Unstructured
}

// LeaseRequest says who takes a lease, and for what.
type LeaseRequest struct {
	// Identity is the holder identity (unique per run); User and Command
	// are shown to others the lease refuses.
	Identity, User, Command string
	// Now is the clock; Log receives renewal failures.
	Now func() time.Time
	Log func(string, ...interface{})
}

// TakeLease takes the release's Lease as o read it before the plan, once
// the API server said the user may get, create and update Leases there
// (SelfSubjectAccessReview; a *LeasePermissionError naming the verbs
// missing otherwise, before any write): it creates it when there was none, or takes it over when it was free,
// released or stale, on condition that nobody changed it since (the read's
// resourceVersion). Otherwise it returns a *LeaseError naming the run that
// took it. The lease is renewed until Release. It returns no lease (and no
// error) when the namespace does not exist yet.
func TakeLease(ctx context.Context, cluster *live.Cluster, o *LeaseObservation, req LeaseRequest) (*HeldLease, error) {
	if req.Now == nil {
		req.Now = time.Now
	}
	if req.Log == nil {
		req.Log = func(string, ...interface{}) {}
	}
	// Before the first write: a user who could take the lease but not
	// renew or read it would fail half-way.
	if err := checkLeaseAccess(ctx, cluster.Dynamic, o.Release, o.Namespace); err != nil {
		return nil, err
	}
	res := cluster.Dynamic.Resource(live.LeasesGVR).Namespace(o.Namespace)
	now := req.Now()
	obj := o.obj.DeepCopy()
	if obj == nil {
		obj = &unstructured.Unstructured{}
		obj.SetAPIVersion("coordination.k8s.io/v1")
		obj.SetKind("Lease")
		obj.SetName(LeaseName(o.Release))
		obj.SetNamespace(o.Namespace)
		obj.SetLabels(map[string]string{JournalReleaseLabel: o.Release, manifest.ManagedByLabel: journalManagedBy})
	}
	transitions, _, _ := unstructured.NestedInt64(obj.Object, "spec", "leaseTransitions")
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[leaseUserAnnotation], ann[leaseCommandAnnotation] = req.User, req.Command
	ann[leaseStartedAnnotation] = now.UTC().Format(time.RFC3339)
	ann[leaseHolderAnnotation] = req.Identity
	obj.SetAnnotations(ann)
	stamp := metav1.NewMicroTime(now).UTC().Format(metav1.RFC3339Micro)
	spec := map[string]interface{}{"holderIdentity": req.Identity, "leaseDurationSeconds": int64(LeaseDuration / time.Second),
		"acquireTime": stamp, "renewTime": stamp, "leaseTransitions": transitions + 1}
	obj.Object["spec"] = spec

	var got *unstructured.Unstructured
	var err error
	if o.obj == nil {
		got, err = res.Create(ctx, obj, metav1.CreateOptions{})
	} else {
		got, err = res.Update(ctx, obj, metav1.UpdateOptions{}) // resourceVersion as read: a precondition
	}
	if o.obj == nil && apierrors.IsNotFound(err) {
		// The namespace does not exist yet (an install with
		// --create-namespace: Helm creates it): nobody can hold a lease
		// there, and none can be taken before Helm runs.
		return nil, nil
	}
	if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
		// A read inside the take: it stays on the client that writes.
		now, err := res.Get(ctx, LeaseName(o.Release), metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("release %q in namespace %s: another run took its Lease %s while this run planned (reading it: %v); nothing was written: plan again", o.Release, o.Namespace, LeaseName(o.Release), err)
		}
		return nil, &LeaseError{Release: o.Release, Namespace: o.Namespace, Holder: holderOf(now), Since: true, Now: req.Now()}
	}
	if apierrors.IsForbidden(err) {
		return nil, &LeasePermissionError{Release: o.Release, Namespace: o.Namespace, Verbs: []string{verbOf(o.obj == nil)}}
	}
	if err != nil {
		return nil, fmt.Errorf("release %q in namespace %s: taking its Lease %s: %w; nothing was written", o.Release, o.Namespace, LeaseName(o.Release), err)
	}
	h := &HeldLease{res: res, identity: req.Identity, obj: got, stop: make(chan struct{}), done: make(chan struct{}), log: req.Log}
	go h.renew(req.Now)
	return h, nil
}

func verbOf(create bool) string {
	if create {
		return "create"
	}
	return "update"
}

// renew renews the lease every third of its duration until Release.
func (h *HeldLease) renew(now func() time.Time) {
	defer close(h.done)
	ticker := time.NewTicker(LeaseDuration / 3)
	defer ticker.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-ticker.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), LeaseDuration/3)
		err := h.update(ctx, func(spec map[string]interface{}) {
			spec["renewTime"] = metav1.NewMicroTime(now()).UTC().Format(metav1.RFC3339Micro)
		})
		cancel()
		if err != nil {
			h.log("warning: renewing the Lease %s: %v", h.name(), err)
		}
	}
}

func (h *HeldLease) name() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.obj.GetNamespace() + "/" + h.obj.GetName()
}

// errLeaseLost: another run took the lease over (this one was not renewed
// in time).
var errLeaseLost = errors.New("the lease was taken over by another run")

// update changes the lease's spec, as long as this run holds it.
func (h *HeldLease) update(ctx context.Context, edit func(spec map[string]interface{})) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for range 3 {
		obj := h.obj.DeepCopy()
		if holderOf(obj).Identity != h.identity {
			return errLeaseLost
		}
		spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
		edit(spec)
		obj.Object["spec"] = spec
		got, err := h.res.Update(ctx, obj, metav1.UpdateOptions{})
		if err == nil {
			h.obj = got
			return nil
		}
		if !apierrors.IsConflict(err) {
			return err
		}
		// A read inside the retry of a write: it stays on the writing client.
		if h.obj, err = h.res.Get(ctx, obj.GetName(), metav1.GetOptions{}); err != nil {
			return err
		}
	}
	return fmt.Errorf("updating the Lease %s: conflicts", h.obj.GetName())
}

// Release stops renewing the lease and frees it (its holder cleared; the
// object stays, so that a run which read it before this one took it sees
// that it moved). It is safe to call on a nil lease and more than once.
func (h *HeldLease) Release() error {
	if h == nil || !h.Stop() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), LeaseDuration/3)
	defer cancel()
	err := h.update(ctx, func(spec map[string]interface{}) {
		delete(spec, "holderIdentity")
		delete(spec, "renewTime")
	})
	if err != nil && !errors.Is(err, errLeaseLost) {
		return fmt.Errorf("releasing the Lease %s: %w (it is stale in %s, then the next run takes it over)", h.name(), err, LeaseDuration)
	}
	return nil
}

// Stop stops renewing the lease without releasing it (it goes stale after
// LeaseDuration); it reports whether the lease was still being renewed.
func (h *HeldLease) Stop() bool {
	if h == nil {
		return false
	}
	select {
	case <-h.stop:
		return false
	default:
		close(h.stop)
	}
	<-h.done
	return true
}

var selfSubjectReviewsGVR = schema.GroupVersionResource{Group: "authentication.k8s.io", Version: "v1", Resource: "selfsubjectreviews"}

// WhoAmI returns the user name the API server knows the client as
// (SelfSubjectReview, authentication.k8s.io/v1; an impersonated user when
// the client impersonates). A review is answered, not stored.
func WhoAmI(ctx context.Context, dyn dynamic.Interface) (string, error) {
	review := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}}
	got, err := dyn.Resource(selfSubjectReviewsGVR).Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("asking the API server who you are (SelfSubjectReview): %w", err)
	}
	name, _, _ := unstructured.NestedString(got.Object, "status", "userInfo", "username")
	return name, nil
}
