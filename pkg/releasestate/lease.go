package releasestate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// One writing run (an apply, a rollback, an uninstall, --recover) of a
// release at a time: a coordination.k8s.io/v1 Lease in the release
// namespace, held and renewed by the writing process.
// A run reads it before it plans (ObserveLease: a live lease held by another
// refuses the run) and takes it once the gate let the plan through
// (TakeLease), on condition that nobody took it since the read (the Lease's
// resourceVersion is the precondition): a run that gets it applies a plan
// computed while no other apply ran, and a blocked run writes nothing. The
// Lease is released (its holder cleared, the object kept, so the next run's
// precondition sees it moved) when the run ends. Every writing verb goes
// through the same lifecycle: ObserveLease before its plan, AcquireLease
// (TakeLease) once the gate let it through, renewal, End.

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
	// now is when it was read; here is the machine that read it.
	now  time.Time
	here host
}

// LeaseHolder says who holds (or last held) a release's Lease. Anyone who
// may write Leases in the namespace can write it: its texts are printed
// through redact's Text, and a Lease no run of this tool can have written
// is not trusted to expire (Malformed).
type LeaseHolder struct {
	Identity, User, Command string
	Started, Renewed        time.Time
	Duration                time.Duration
	// Released: the holder released the lease (Identity is the last one).
	Released bool
	// Malformed says why a held Lease cannot be one a run of this tool
	// wrote (a renewTime in the future beyond clock skew, a duration longer
	// than LeaseDuration): it may never go stale; "" when it can be
	// trusted. Writer is who last wrote the Lease, from its managed
	// fields (manager, operation and time); "" when they do not say.
	Malformed, Writer string
	// Gone: the holder's identity names this host and a process that no
	// longer runs on it (killed): the lease goes stale without renewal.
	Gone bool
}

// maxClockSkew is how far in the future a renewTime may be (another
// machine's clock) before the Lease is malformed.
const maxClockSkew = time.Minute

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
		if d > int64(LeaseDuration/time.Second) {
			h.Malformed = fmt.Sprintf("its leaseDurationSeconds %d is more than the %d this tool writes", d, int64(LeaseDuration/time.Second))
			d = int64(LeaseDuration / time.Second) // no overflow in Renewed.Add
		}
		h.Duration = time.Duration(d) * time.Second
	}
	h.Writer = lastWriter(obj)
	return h
}

// lastWriter is who last wrote obj, from its managed fields: `"manager"
// (operation) at time`, "" when they do not say.
func lastWriter(obj *unstructured.Unstructured) string {
	var last *metav1.ManagedFieldsEntry
	fields := obj.GetManagedFields()
	for i := range fields {
		if f := &fields[i]; f.Time != nil && (last == nil || last.Time.Before(f.Time)) {
			last = f
		}
	}
	if last == nil {
		return ""
	}
	return fmt.Sprintf(`"%s" (%s) at %s`, escaped(last.Manager, redact.NameLimit), escaped(string(last.Operation), redact.NameLimit), last.Time.UTC().Format(time.RFC3339))
}

// escaped is text from a Lease as printed: escaped and bounded (redact's
// Text; the Error: line and the plan's notes mask Secret values again).
func escaped(text string, limit int) string {
	var noSecrets *redact.Sanitizer
	return noSecrets.Text(text, limit)
}

// assess sets, as of now, whether the lease is malformed (its renewTime;
// the duration was checked when read) and whether its holder ran on this
// host, here, and is gone.
func (h *LeaseHolder) assess(now time.Time, here host) {
	if h.Released || h.Identity == "" {
		return
	}
	if h.Renewed.After(now.Add(maxClockSkew)) {
		future := fmt.Sprintf("its renewTime %s is in the future", h.Renewed.UTC().Format(time.RFC3339))
		h.Malformed = strings.Join(nonEmpty(future, h.Malformed), ", and ")
	}
	if hostName, pid, ok := parseIdentity(h.Identity); ok && here.name != "" && hostName == here.name && here.running != nil {
		h.Gone = !here.running(pid)
	}
}

func nonEmpty(parts ...string) []string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// identityPattern matches a holder identity as leaseRequest (pkg/verb)
// writes it: "USER on HOST (pid N, run R)".
var identityPattern = regexp.MustCompile(`^.* on (\S+) \(pid (\d+), run [0-9a-f]+\)$`)

// parseIdentity returns the host and process of a holder identity written
// by this tool; ok is false for any other text.
func parseIdentity(identity string) (hostName string, pid int, ok bool) {
	m := identityPattern.FindStringSubmatch(identity)
	if m == nil {
		return "", 0, false
	}
	pid, err := strconv.Atoi(m[2])
	if err != nil || pid <= 0 {
		return "", 0, false
	}
	return m[1], pid, true
}

// host is the machine a run reads the lease on: its name, and whether a
// process of it runs (nil: cannot tell).
type host struct {
	name    string
	running func(pid int) bool
}

// thisHost is the machine this process runs on.
func thisHost() host {
	name, _ := os.Hostname()
	return host{name: name, running: processRunning}
}

// live reports whether the holder holds the lease at now: it has a holder
// renewed less than its duration ago, or one that cannot be trusted to
// expire (Malformed).
func (h LeaseHolder) live(now time.Time) bool {
	return !h.Released && h.Identity != "" && (h.Malformed != "" || now.Before(h.Renewed.Add(h.Duration)))
}

func (h LeaseHolder) String() string {
	s := escaped(h.Identity, redact.NameLimit)
	if h.Command != "" {
		s += fmt.Sprintf(" running \"%s\"", escaped(h.Command, redact.MessageLimit))
	}
	if !h.Started.IsZero() {
		s += " since " + h.Started.UTC().Format(time.RFC3339)
	}
	return s
}

// staleIn is how long until the lease is stale, never less than 0.
func (h LeaseHolder) staleIn(now time.Time) time.Duration {
	return max(h.Renewed.Add(h.Duration).Sub(now), 0).Round(time.Second)
}

// malformed says that the lease cannot be trusted, who last wrote it and
// how to remove it.
func (h LeaseHolder) malformed(ns, release string) string {
	s := fmt.Sprintf("the Lease %s/%s is malformed: %s; no run of this tool writes that, and it may never go stale", ns, LeaseName(release), h.Malformed)
	if h.Writer != "" {
		s += "; it was last written by " + h.Writer
	}
	return s + fmt.Sprintf("; its holder says %s", h)
}

// deleteCommand is the command that removes the Lease of release in ns.
func deleteCommand(ns, release string) string {
	return fmt.Sprintf("kubectl delete lease -n %s %s", ns, LeaseName(release))
}

// Live returns the holder of a live lease held by someone (a malformed
// one included: it cannot be trusted to end), nil when the lease is free,
// released or stale.
func (o *LeaseObservation) Live() *LeaseHolder {
	if o == nil || o.obj == nil {
		return nil
	}
	h := holderOf(o.obj)
	h.assess(o.now, o.here)
	if !h.live(o.now) {
		return nil
	}
	return &h
}

// Note is the plan's note about a live lease ("" when there is none).
func (o *LeaseObservation) Note() string {
	h := o.Live()
	switch {
	case h == nil:
		return ""
	case h.Malformed != "":
		return fmt.Sprintf("%s; an apply now would be refused: if no apply of this release is running, remove it with: %s", h.malformed(o.Namespace, o.Release), deleteCommand(o.Namespace, o.Release))
	case h.Gone:
		return fmt.Sprintf("the Lease %s/%s is held by %s, whose process ran on this host and no longer runs; the lease is stale in %s (at %s), then an apply or --recover takes it over",
			o.Namespace, LeaseName(o.Release), h, h.staleIn(o.now), h.Renewed.Add(h.Duration).UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("an apply of this release is running: the Lease %s/%s is held by %s; an apply now would be refused until it ends", o.Namespace, LeaseName(o.Release), h)
}

// LeaseError says that another run holds, or took since this run's plan,
// the release's Lease (or that the Lease is malformed). Nothing was written.
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
	h := e.Holder
	switch {
	case h.Malformed != "":
		return fmt.Sprintf("release %q in namespace %s: %s; nothing was written: if no apply of this release is running, remove the Lease with: %s",
			e.Release, e.Namespace, h.malformed(e.Namespace, e.Release), deleteCommand(e.Namespace, e.Release))
	case e.Since && !h.live(e.Now):
		return fmt.Sprintf("release %q in namespace %s: another run (%s) took the %s while this run planned; nothing was written: plan again",
			e.Release, e.Namespace, h, lease)
	case h.Gone:
		return fmt.Sprintf("release %q in namespace %s: the %s is held by %s, whose process ran on this host and no longer runs; nothing was written: the lease is stale in %s (at %s), then an apply or --recover takes it over",
			e.Release, e.Namespace, lease, h, h.staleIn(e.Now), h.Renewed.Add(h.Duration).UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("release %q in namespace %s is being applied by %s (%s, renewed %s ago; stale if not renewed within %s); nothing was written: wait until it ends, then plan again",
		e.Release, e.Namespace, h, lease, max(e.Now.Sub(h.Renewed), 0).Round(time.Second), h.staleIn(e.Now))
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
	return observeLease(ctx, cluster, release, ns, apply, now, thisHost())
}

// observeLease is ObserveLease on the machine here.
func observeLease(ctx context.Context, cluster *live.Cluster, release, ns string, apply bool, now time.Time, here host) (*LeaseObservation, error) {
	obj, err := cluster.Lease(ctx, ns, LeaseName(release))
	return leaseObservation(obj, err, release, ns, apply, now, here)
}

// leaseObservation is the observation of obj, release's Lease in ns, read
// with err.
func leaseObservation(obj *unstructured.Unstructured, err error, release, ns string, apply bool, now time.Time, here host) (*LeaseObservation, error) {
	o := &LeaseObservation{Release: release, Namespace: ns, now: now, here: here}
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
		h := holderOf(now)
		h.assess(req.Now(), thisHost())
		return nil, &LeaseError{Release: o.Release, Namespace: o.Namespace, Holder: h, Since: true, Now: req.Now()}
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

// AcquireLease is how every writing verb takes the release's Lease: as
// observed before its plan, or, when none was read (observed nil), as read
// now, refused while another run holds it live (see ObserveLease); then
// taken (TakeLease) and renewed until End.
func AcquireLease(ctx context.Context, cluster *live.Cluster, release, ns string, observed *LeaseObservation, req LeaseRequest) (*HeldLease, error) {
	if req.Now == nil {
		req.Now = time.Now
	}
	if observed == nil {
		var err error
		if observed, err = ObserveLease(ctx, cluster, release, ns, true, req.Now()); err != nil {
			return nil, err
		}
	}
	return TakeLease(ctx, cluster, observed, req)
}

// End ends a lease AcquireLease took: released; or, when the API server did
// not answer the run's clean-up (unanswered), only no longer renewed (it
// goes stale after LeaseDuration) instead of waiting for the server once
// more. The error says what was not done. Safe on a nil lease.
func (h *HeldLease) End(unanswered bool) error {
	if unanswered && h != nil {
		h.Stop()
		return fmt.Errorf("the API server did not answer: the release's Lease is not released; it is stale in %s, then the next run (or --recover) takes it over", LeaseDuration)
	}
	return h.Release()
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
	stale := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if stale {
			// A read inside the retry of a write: it stays on the writing client.
			cur, err := h.res.Get(ctx, h.obj.GetName(), metav1.GetOptions{})
			if err != nil {
				return err
			}
			h.obj = cur
		}
		stale = true
		obj := h.obj.DeepCopy()
		if holderOf(obj).Identity != h.identity {
			return errLeaseLost
		}
		spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
		edit(spec)
		obj.Object["spec"] = spec
		got, err := h.res.Update(ctx, obj, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		h.obj = got
		return nil
	})
	if apierrors.IsConflict(err) {
		return fmt.Errorf("updating the Lease %s: conflicts: %w", h.obj.GetName(), err)
	}
	return err
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
