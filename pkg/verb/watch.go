package verb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/apply"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/watch"
)

// WatchRequest is whether and how long the rollout is watched after apply.
type WatchRequest struct {
	// Off is --no-watch: the run ends when Helm returns, as helm upgrade.
	Off bool
	// Timeout is --watch-timeout; 0: --timeout.
	Timeout time.Duration
}

// RolloutError is a rollout that failed or was not ready when the watch
// ended: Helm deployed the revision, and what failed is named with why.
type RolloutError struct {
	Release  string
	Revision int
	Outcome  *plan.Outcome
}

func (e *RolloutError) Error() string {
	return fmt.Sprintf("release %q revision %d was applied, but its rollout failed: %s%s", e.Release, e.Revision, timedOutLine(e.Outcome), failureLine(e.Outcome))
}

// timedOutLine says, once for all objects, that the watch timed out
// before they were current ("" when it did not): it starts a failure line.
func timedOutLine(o *plan.Outcome) string {
	if !o.TimedOut {
		return ""
	}
	return fmt.Sprintf("the watch timed out after %s: ", o.Elapsed.Round(time.Second))
}

// InterruptedError is a watch stopped before its end (Ctrl-C): Helm
// applied the revision and its status stays as Helm left it; the objects
// not current then were not seen to their end, not seen to fail.
type InterruptedError struct {
	// Program is how the user runs the tool (Config.Program).
	Program, Release, Namespace string
	Revision                    int
	// Status is Helm's status of the revision, as the apply left it.
	Status  string
	Outcome *plan.Outcome
}

func (e *InterruptedError) Error() string {
	notCurrent := 0
	for _, ob := range e.Outcome.Objects {
		if ob.State == plan.StateInProgress {
			notCurrent++
		}
	}
	s := fmt.Sprintf("release %q revision %d was applied; the rollout watch was interrupted after %s, with %d object(s) not current yet",
		e.Release, e.Revision, e.Outcome.Elapsed.Round(time.Second), notCurrent)
	if failed := e.Outcome.Failed - notCurrent; failed > 0 {
		s += fmt.Sprintf(" and %d seen failing (%s)", failed, failureLine(e.Outcome, plan.StateFailed))
	}
	return s + fmt.Sprintf(". Nothing failed because of the interruption: Helm's status of the revision stays %s. "+
		"To see how the rollout goes on: %s status %s -n %s", e.Status, e.Program, e.Release, e.Namespace)
}

// failureLine names each object that failed or was not ready, with why.
// states: only the objects in one of them.
func failureLine(o *plan.Outcome, states ...string) string {
	if len(states) == 0 {
		states = []string{plan.StateFailed, plan.StateInProgress}
	}
	var parts []string
	for _, ob := range o.Objects {
		if !slices.Contains(states, ob.State) {
			continue
		}
		part := fmt.Sprintf("%s %s", ob.ID, ob.State)
		if ob.Reason != "" {
			part += ": " + ob.Reason
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}

// watcher prepares the watch of planned's rollout, reading the pods and
// claims the outcome compares with; nil when the watch is off or there is
// nothing to follow. A snapshot that fails is a warning: the rollout is
// still watched, only without the comparison.
func (c *Config) watcher(ctx context.Context, planned *Planned) *watch.Watcher {
	if planned.Apply.Watch.Off {
		return nil
	}
	w := watch.New(c.Cluster.Reader(), planned.Plan)
	if w.Empty() {
		return nil
	}
	if err := c.Stage("snapshot", func() error { return w.Snapshot(ctx) }); err != nil {
		fmt.Fprintf(c.Out, "WARNING: %s; the outcome cannot compare pods and claims with the plan\n", c.Sanitizer.Text(err.Error(), redact.MessageLimit))
	}
	return w
}

// watchAlongside starts, when Helm itself waits for the rollout (--wait,
// --atomic), the watch alongside Helm's apply (see watch.Alongside); the
// function it returns stops it and says what it saw wrong. Without Helm's
// wait, or without a watch, it starts nothing.
func (c *Config) watchAlongside(ctx context.Context, w *watch.Watcher, planned *Planned) (stop func() []string) {
	if w == nil || !planned.Render.Wait && !planned.Render.Atomic || c.Announce != nil {
		return func() []string { return nil }
	}
	ctx, cancel := context.WithCancel(ctx)
	seen := make(chan []string, 1)
	go func() { seen <- w.Alongside(ctx, c.watchProgress()) }()
	return func() []string {
		cancel()
		return <-seen
	}
}

// watchProgress is where the watch shows its progress: redrawn in place on
// a terminal, a line per change and a heartbeat elsewhere.
func (c *Config) watchProgress() watch.Progress {
	if c.Terminal {
		return watch.NewTerminalProgress(c.Out, c.TerminalSize, c.Sanitizer)
	}
	return watch.NewProgress(c.Out, false, c.Sanitizer)
}

// explainWait adds to err, Helm's failed wait (and, with --atomic, its
// rollback), what the watch saw going wrong while Helm waited, and puts it
// first in the failed revision's description in `helm history`.
func (c *Config) explainWait(planned *Planned, err error, troubles []string) error {
	line := "the watch saw, while Helm waited: " + c.texts(troubles, redact.MessageLimit)
	var ue *apply.UpgradeError
	if errors.As(err, &ue) && ue.AttemptedStatus == release.StatusFailed {
		if derr := releasestate.DescribeFailed(c.Helm, planned.Plan.Release.Namespace, ue.Name, ue.Attempted, c.helmDescription("Rollout failed: "+line, ue.Name)); derr != nil {
			fmt.Fprintf(c.Out, "WARNING: recording the failed rollout in revision %d: %s\n", ue.Attempted, c.Sanitizer.Text(derr.Error(), redact.MessageLimit))
		}
	}
	return fmt.Errorf("%w; %s", err, line)
}

// watchRollout follows the rollout of the applied revision rel until every
// object is current or failed, prints the outcome on Out, and records it in
// planned.Plan.Outcome; a failed rollout is a *RolloutError, and the
// revision's record says so (status failed, the description naming what
// failed); an interrupted watch (Ctrl-C) is an *InterruptedError, and
// Helm's record of the revision keeps status, its status as Helm left it.
func (c *Config) watchRollout(ctx context.Context, w *watch.Watcher, planned *Planned, revision int, status release.Status) error {
	timeout := planned.Apply.Watch.Timeout
	if timeout <= 0 {
		timeout = planned.Render.TimeLimit()
	}
	c.progress("Watching the rollout (up to %s)", timeout)
	start, before := time.Now(), c.Requests()
	// Every request of the watch, and Helm's record of its outcome, ends
	// by the watch's deadline and one request's: a server that stops
	// answering ends the run then, whatever client sends them.
	w.RequestTimeout = c.RequestTimeout
	defer c.boundBy(start.Add(timeout + c.RequestTimeout))()
	out, err := w.Run(ctx, timeout, c.watchProgress())
	// The watch's cost (make bench reads it): its time after Helm
	// returned, its requests, and the LISTs and WATCHes per resource.
	c.logStage("watch", time.Since(start), c.Requests()-before, w.Requests())
	var unanswered *watch.UnansweredError
	if errors.As(err, &unanswered) {
		// Recording the outcome in the release would only wait for the
		// server again: the revision stays as Helm recorded it.
		return fmt.Errorf("release %q revision %d was applied, but %w; its rollout was not seen to its end", planned.Plan.Release.Name, revision, c.Sanitizer.Error(err))
	}
	if err != nil {
		return fmt.Errorf("watching the rollout of revision %d: %w", revision, c.Sanitizer.Error(err))
	}
	name := planned.Plan.Release.Name
	if out.Interrupted {
		// Stopped watching is not a failed rollout: Helm's status stays
		// as the apply left it, the revision's record says the watch was
		// interrupted, and `status` tells how the rollout goes on.
		cleanOutcome(out, c.Sanitizer)
		planned.Plan.Outcome = out
		if c.Terminal {
			fmt.Fprintln(c.Out) // after the "^C" the terminal echoed
		}
		writeOutcome(c.Out, out, planned.Plan)
		return &InterruptedError{Program: c.program(), Release: name, Namespace: planned.Plan.Release.Namespace, Revision: revision, Status: status.String(), Outcome: out}
	}
	c.checkReaders(ctx, planned, out)
	cleanOutcome(out, c.Sanitizer)
	planned.Plan.Outcome = out
	writeOutcome(c.Out, out, planned.Plan)
	if out.OK() {
		return nil
	}
	line := c.helmDescription(plan.RolloutFailedLine+timedOutLine(out)+failureLine(out), name)
	if err := releasestate.MarkRolloutFailed(c.Helm, planned.Plan.Release.Namespace, name, revision, line); err != nil {
		fmt.Fprintf(c.Out, "WARNING: recording the failed rollout in revision %d: %s\n", revision, c.Sanitizer.Text(err.Error(), redact.MessageLimit))
	}
	return &RolloutError{Release: name, Revision: revision, Outcome: out}
}

// descriptionBudget bounds what the tool writes into Helm's description
// of a revision (the column of `helm history`): what happened, to be read
// at a glance; the whole text is in the run's output and the revision's
// record (`log`).
const descriptionBudget = 300

// helmDescription is line as Helm's description of a revision of release
// records it: masked, escaped, and cut to descriptionBudget, saying where
// the rest is.
func (c *Config) helmDescription(line, release string) string {
	s := c.Sanitizer.Record(line, redact.RecordLimit)
	if len(s) <= descriptionBudget {
		return s
	}
	more := "… (all of it: " + c.program() + " log " + release + ")"
	cut := max(descriptionBudget-len(more), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + more
}

// cleanOutcome passes what the cluster said of each object (its pods'
// status, events, logs) through san.Text, before the outcome is printed,
// reported (JSON, Markdown) or recorded in the revision's description.
func cleanOutcome(o *plan.Outcome, san *redact.Sanitizer) {
	for i := range o.Objects {
		ob := &o.Objects[i]
		ob.Reason, ob.Detail = san.Text(ob.Reason, redact.MessageLimit), san.Text(ob.Detail, redact.MessageLimit)
	}
}

// texts is each of lines through Text (bounded by limit), joined by "; ".
func (c *Config) texts(lines []string, limit int) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = c.Sanitizer.Text(l, limit)
	}
	return strings.Join(out, "; ")
}

// writeOutcome prints the rollout's end, one line per object with its
// whole text (the live lines were cut to the terminal), in summaryOrder,
// and the prediction check; p is the plan applied (nil: plan order).
func writeOutcome(w io.Writer, o *plan.Outcome, p *plan.Plan) {
	current := 0
	for _, ob := range o.Objects {
		if ob.State == plan.StateCurrent {
			current++
		}
	}
	if o.Interrupted {
		fmt.Fprintf(w, "Rollout: watch interrupted after %s: %d of %d object(s) current, %d not current yet\n", o.Elapsed.Round(time.Second), current, len(o.Objects), len(o.Objects)-current)
	} else if o.TimedOut {
		fmt.Fprintf(w, "Rollout: watch timed out after %s: %d of %d object(s) current, %d failed or not ready\n", o.Elapsed.Round(time.Second), current, len(o.Objects), o.Failed)
	} else {
		fmt.Fprintf(w, "Rollout: %d of %d object(s) current, %d failed or not ready (%s)\n", current, len(o.Objects), o.Failed, o.Elapsed.Round(time.Second))
	}
	for _, ob := range summaryOrder(o.Objects, p) {
		text := ob.State
		if more := joinNonEmpty(ob.Detail, ob.Reason); more != "" {
			text += ": " + more
		}
		fmt.Fprintf(w, "  %s: %s\n", ob.ID, text)
	}
	unchecked := ""
	if o.Interrupted && current < len(o.Objects) {
		// Not seen to their end: their pods are not compared with the plan.
		unchecked = fmt.Sprintf("; %d not checked: not current when the watch was interrupted", len(o.Objects)-current)
	}
	fmt.Fprintf(w, "Outcome: %d as predicted, %d differ%s\n", o.AsPredicted, o.Differ, unchecked)
	for _, ob := range o.Objects {
		if ob.Predicted == "" {
			continue
		}
		if ob.AsPredicted {
			fmt.Fprintf(w, "  %s: %s (predicted: %s)\n", ob.ID, ob.Observed, ob.Predicted)
		} else {
			fmt.Fprintf(w, "  WARNING: %s: predicted %s, observed %s\n", ob.ID, ob.Predicted, ob.Observed)
		}
	}
}

// summaryOrder is objs in the order the summary reads: failed, not ready,
// unknown, then current, those the plan recreates (deleted and created
// again: its destructive changes) first; the plan's order within each.
func summaryOrder(objs []plan.ObjectOutcome, p *plan.Plan) []plan.ObjectOutcome {
	recreated := map[manifest.ObjectID]bool{}
	if p != nil {
		for _, ch := range p.Changes {
			recreated[ch.ID] = ch.Class == plan.ClassRecreateRequired
		}
	}
	rank := func(ob plan.ObjectOutcome) int {
		switch {
		case ob.State == plan.StateFailed:
			return 0
		case ob.State == plan.StateInProgress:
			return 1
		case ob.State != plan.StateCurrent:
			return 2
		case recreated[ob.ID]:
			return 3
		}
		return 4
	}
	out := append([]plan.ObjectOutcome(nil), objs...)
	sort.SliceStable(out, func(i, j int) bool { return rank(out[i]) < rank(out[j]) })
	return out
}

func joinNonEmpty(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}
