package verb

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apply"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/guard"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/report"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/watch"
)

// ApplyMode is how to apply a reviewed plan (the full request to Helm is
// apply.Request, which Apply builds).
type ApplyMode struct {
	// Force passes --force-replace (Helm 3's --force) to Helm: every object
	// that exists replaced with PUT, changed or not (planned so: see
	// plan.Release.ForceReplace); only when the user asked for it. Helm 4
	// refuses it with server-side apply, and so do the plan and the apply.
	Force bool
	// RestartStale is --restart-stale: the workloads the plan restarts
	// (plan.Plan.Restarts) are restarted once Helm's upgrade succeeded
	// (see restart.go); saved plans pin it.
	RestartStale bool
	// Watch is whether and how long the rollout is watched after Helm
	// returns (not pinned by saved plans: it writes nothing).
	Watch WatchRequest
}

// Apply hands exactly the reviewed render of planned to Helm, as
// planned.Apply says, recreating first the acknowledged recreate-required
// objects, and says on Out what became of the release; then, unless
// --no-watch, it watches the rollout and checks the prediction (see
// watchRollout): a rollout that fails is a *RolloutError.
func (c *Config) Apply(ctx context.Context, planned *Planned) error {
	if err := c.Connect(ctx); err != nil {
		return err
	}
	user, lease, err := c.takeLease(ctx, planned.Plan.Release.Name, planned.Lease)
	if err != nil {
		return err
	}
	run := &applyRun{}
	defer func() { c.releaseLease(lease, run.unanswered) }()
	// Helm's upgrade and rollback delete with background propagation.
	acks, err := c.ackGuardedDeletes(ctx, planned.Plan, false)
	if err != nil {
		return err
	}
	w := c.watcher(ctx, planned)
	defer w.Stop() // its WATCHes of pods, when the run ends before the watch
	rel, troubles, err := c.runHelm(ctx, w, planned, user)
	if revision, said, ok := recorded(rel, err); ok {
		// The revision's record, once the rollout was watched (deferred:
		// every return below), while the Lease is still held.
		run.said = said
		defer func() {
			if !run.unanswered { // writing it would only wait for the server again
				c.recordRevision(ctx, planned, revision, user, run.said)
			}
		}()
	}
	if err != nil {
		return c.applyFailed(ctx, planned, run, err, acks, w, troubles)
	}
	if err := c.restartStale(ctx, planned, rel.Version); err != nil {
		return err
	}
	return c.applied(ctx, planned, run, w, rel)
}

// applyRun is what one Apply learns on the way that its deferred steps
// read.
type applyRun struct {
	// unanswered: the clean-up after a failure found the API server not
	// answering; releasing the lease would only wait another --timeout,
	// and writing the record too.
	unanswered bool
	// said is what the revision's record says Helm said (with what the
	// watch saw while Helm waited, once known).
	said string
}

// runHelm hands planned to Helm (apply.Apply) as user, the rollout
// watched alongside by w; it returns what the watch saw go wrong meanwhile.
func (c *Config) runHelm(ctx context.Context, w *watch.Watcher, planned *Planned, user string) (*release.Release, []string, error) {
	req := planned.Apply
	var recreate []plan.Change
	for _, ch := range planned.Plan.Changes {
		if ch.Action == plan.ActionUpdate && ch.Class == plan.ClassRecreateRequired && ch.Acknowledged {
			recreate = append(recreate, ch)
		}
	}
	c.progress("Applying revision %d through Helm", planned.Plan.Release.Revision)
	if req.Force && !planned.Plan.Release.ServerSide() { // refused for server-side apply
		fmt.Fprintln(c.Out, "WARNING: --force-replace: Helm replaces every object of the new manifest that exists with PUT, changed or not, instead of patching it (the plan checked each PUT)")
	}
	seen := c.watchAlongside(ctx, w, planned)
	planned.applied = c.Now()
	rel, err := apply.Apply(ctx, apply.Request{
		Config:      c.Helm,
		Cluster:     c.Cluster,
		Settings:    c.Settings,
		ReleaseName: planned.Plan.Release.Name,
		ChartRef:    planned.ChartRef,
		Render:      planned.Render,
		Rendered:    planned.Rendered,
		Recreate:    recreate,
		Force:       req.Force,
		ApplyMethod: planned.Plan.Release.ApplyMethod,
		Description: c.describe(report.AuditLine(planned.Plan, planned.Render.Description)),
		Sanitizer:   c.Sanitizer,
		User:        user,
		Log:         c.Logf,
		Bound:       c.boundBy,
	}, c.Out)
	return rel, seen(), err
}

// recorded is the revision Helm's run wrote (or attempted, when it
// failed) and what its record says Helm said; ok is false when there is
// none to record (Helm failed before, or its release could not be read
// back).
func recorded(rel *release.Release, err error) (revision int, said string, ok bool) {
	var ue *apply.UpgradeError
	failed := errors.As(err, &ue) && ue.ReadErr == nil
	if err != nil && !failed {
		return 0, "", false
	}
	var attempted int
	var status release.Status
	if failed {
		attempted, status = ue.Attempted, ue.AttemptedStatus
	}
	revision, said = appliedRevision(rel, err, attempted, status)
	return revision, said, true
}

// applyFailed is Apply's error when Helm's run failed with err: the
// guard's acknowledgements revoked, what the hooks' pods and the watch saw
// added.
func (c *Config) applyFailed(ctx context.Context, planned *Planned, run *applyRun, err error, acks *guard.Acks, w *watch.Watcher, troubles []string) error {
	if left := c.revokeGuardAcks(ctx, acks); left != "" {
		err = fmt.Errorf("%w; %s", err, left)
	}
	if w != nil {
		// The watch's cost, as the success path's stage line says it.
		c.Logf("stage watch (until Helm failed): %s", w.Requests())
	}
	run.unanswered = serverUnanswered(err)
	err = c.explainHooks(ctx, planned, err)
	var ue *apply.UpgradeError
	if len(troubles) > 0 && errors.As(err, &ue) && !run.unanswered {
		// Helm ran and failed (its wait, most often): what the watch
		// saw says why, and a deadline that passed was the wait's,
		// not the API server's.
		err = c.explainWait(planned, err, troubles)
		if run.said != "" {
			run.said = "failed: " + err.Error() // the record holds it whole
		}
		return err
	}
	return c.timedOut(err)
}

// applied says on Out what became of the release rel Helm applied, with
// its NOTES, and watches its rollout with w (nil: --no-watch).
func (c *Config) applied(ctx context.Context, planned *Planned, run *applyRun, w *watch.Watcher, rel *release.Release) error {
	// A chart's NOTES can print a Secret's value (a password to log in
	// with): masked as in the plan, on either way out.
	shown, info := *rel, *rel.Info
	// Escaped too, line by line: a rollback's NOTES come from a stored
	// record anyone who may write Secrets can forge.
	info.Notes = c.Sanitizer.Lines(info.Notes)
	shown.Info = &info
	if c.Announce != nil {
		// The helm shim ends where helm upgrade does (its scripts run their
		// own --wait); the rollout watch is the command's.
		return c.Announce(&shown, planned.Rendered.Install)
	}
	verb := "upgraded"
	switch {
	case planned.Rendered.Install:
		verb = "installed"
	case planned.Rendered.RollbackTo > 0:
		verb = fmt.Sprintf("rolled back to revision %d", planned.Rendered.RollbackTo)
	}
	fmt.Fprintf(c.Out, "Release %q %s: revision %d, status %s\n", rel.Name, verb, rel.Version, rel.Info.Status)
	writeNotes(c.Out, info.Notes, planned.Render.HideNotes)
	if w == nil {
		return nil
	}
	err := c.watchRollout(ctx, w, planned, rel.Version, rel.Info.Status)
	var silent *watch.UnansweredError
	run.unanswered = errors.As(err, &silent)
	return err
}

// explainHooks adds to Helm's error what the failed pods of the hook Jobs
// that ran say (Helm only says that a Job failed); err as it is when none
// failed visibly.
func (c *Config) explainHooks(ctx context.Context, planned *Planned, err error) error {
	if planned.Render.DisableHooks || len(planned.Plan.Hooks) == 0 {
		return err
	}
	// Asking a server that does not answer about the hooks' pods would
	// only wait another --timeout before the run can end.
	if serverUnanswered(err) {
		return err
	}
	why, requests := watch.HookFailures(context.WithoutCancel(ctx), c.Cluster.Reader(), planned.Plan)
	c.Logf("hook Jobs' pods read: %s", requests)
	if len(why) == 0 {
		return err
	}
	return fmt.Errorf("%w; %s", err, c.texts(why, redact.MessageLimit))
}

// takeLease is how every writing verb (apply, rollback, uninstall,
// recover) takes the release's Lease: as observed before the plan (nil:
// read now; see releasestate.AcquireLease), for who the API server says
// the user is; it returns that user. releaseLease ends it.
func (c *Config) takeLease(ctx context.Context, release string, observed *releasestate.LeaseObservation) (string, *releasestate.HeldLease, error) {
	user, err := releasestate.WhoAmI(ctx, c.Cluster.Dynamic)
	if err != nil {
		return "", nil, fmt.Errorf("release %q in namespace %s: %w; nothing was written", release, c.Namespace, err)
	}
	req := c.leaseRequest(user)
	lease, err := releasestate.AcquireLease(ctx, c.Cluster, release, c.Namespace, observed, req)
	if err != nil {
		return "", nil, err
	}
	if lease == nil {
		c.Logf("namespace %s does not exist yet: no Lease taken (Helm creates the namespace)", c.Namespace)
	} else {
		c.Logf("took the Lease %s/%s as %s", c.Namespace, releasestate.LeaseName(release), req.Identity)
	}
	return user, lease, nil
}

// leaseRequest says who holds the lease: the user, on this host, in this
// process, in this run (a random part: two runs in one process differ).
func (c *Config) leaseRequest(user string) releasestate.LeaseRequest {
	host, _ := os.Hostname()
	var run [4]byte
	_, _ = rand.Read(run[:])
	return releasestate.LeaseRequest{Identity: fmt.Sprintf("%s on %s (pid %d, run %x)", user, host, os.Getpid(), run), User: user,
		Command: c.Command, Now: c.Now, Log: c.Logf}
}

// serverUnanswered reports whether err says the clean-up after a failed
// apply could not read the release back from the API server.
func serverUnanswered(err error) bool {
	var ue *apply.UpgradeError
	return errors.As(err, &ue) && ue.ReadErr != nil
}

// releaseLease ends a lease taken by takeLease (releasestate's End),
// saying what was not done; when the API server did not answer the
// clean-up (unanswered), the lease is left to go stale instead of waiting
// for the server once more.
func (c *Config) releaseLease(lease *releasestate.HeldLease, unanswered bool) {
	if err := lease.End(unanswered); err != nil {
		fmt.Fprintf(c.Out, "warning: %s\n", c.Sanitizer.Text(err.Error(), redact.MessageLimit))
	}
}

// writeNotes prints the chart's NOTES after an apply, as helm upgrade does,
// unless --hide-notes.
func writeNotes(w io.Writer, notes string, hide bool) {
	if hide || strings.TrimSpace(notes) == "" {
		return
	}
	fmt.Fprintf(w, "NOTES:\n%s\n", strings.TrimRight(notes, "\n"))
}

// describe adds who ran the upgrade, when known, to the release description.
func (c *Config) describe(line string) string {
	if c.Caller == "" {
		return line
	}
	return line + ", run by " + c.Caller + " through the helm shim"
}
