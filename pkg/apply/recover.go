package apply

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// CheckJournal returns a *JournalError when an interrupted apply left the
// recreate journal of release name in namespace ns; every run (plan or
// apply) calls it first, so nothing is planned against a cluster missing
// the objects that apply deleted.
func CheckJournal(ctx context.Context, cluster *live.Cluster, name, ns string) error {
	j, err := readJournal(ctx, cluster.Dynamic.Resource(secretsGVR).Namespace(ns), name)
	if err != nil {
		return fmt.Errorf("release %q in namespace %s: %w", name, ns, err)
	}
	if j != nil {
		return &JournalError{Name: name, Namespace: ns, journal: j}
	}
	return nil
}

// Recover resolves what an interrupted apply (killed, or whose restore
// failed) left: when the journal's revision was deployed, it only removes
// the journal; otherwise it restores every object the journal holds (with
// its previous spec: orphaned pods and claims are adopted again), marks the
// revision the interrupted apply left pending as failed (as Helm's own
// failure handling would, so no `helm rollback` is needed; the deployed
// revision before it stays deployed) with a description that says so, then
// removes the journal. What it did is printed to out. Without a journal it
// says so and does nothing.
func Recover(ctx context.Context, cfg *action.Configuration, cluster *live.Cluster, name, ns string, timeout time.Duration, out io.Writer) error {
	if cfg == nil || cfg.Releases == nil || cluster == nil {
		return fmt.Errorf("recover: no release storage or cluster connection")
	}
	return recoverRelease(ctx, cfg, cluster, name, ns, timeout, out)
}

func recoverRelease(ctx context.Context, cfg *action.Configuration, cluster *live.Cluster, name, ns string, timeout time.Duration, out io.Writer) error {
	if timeout <= 0 {
		timeout = render.DefaultTimeout
	}
	j, err := readJournal(ctx, cluster.Dynamic.Resource(secretsGVR).Namespace(ns), name)
	if err != nil {
		return fmt.Errorf("release %q in namespace %s: %w", name, ns, err)
	}
	if j == nil {
		fmt.Fprintf(out, "Release %q in namespace %s has no recreate journal: nothing to recover\n", name, ns)
		return nil
	}
	fmt.Fprintf(out, "Release %q in namespace %s: %s\n", name, ns, j.describe())
	hist, err := render.History(cfg.Releases, name)
	if err != nil {
		return fmt.Errorf("release %q in namespace %s: reading its history: %w", name, ns, err)
	}
	var attempted *release.Release
	for _, r := range hist {
		if r.Version == j.rec.Revision {
			attempted = r
		}
	}
	if attempted != nil && (attempted.Info.Status == release.StatusDeployed || attempted.Info.Status == release.StatusSuperseded) {
		// The upgrade finished; only the journal's removal was missed.
		if err := j.remove(ctx); err != nil {
			return err
		}
		fmt.Fprintf(out, "Revision %d was deployed: the upgrade finished; the journal is removed, nothing else to do\n", j.rec.Revision)
		return nil
	}
	rec := &recreator{cluster: cluster, out: out, log: func(string, ...interface{}) {}, release: name, namespace: ns, timeout: timeout, poll: pollInterval}
	line, err := rec.undo(j)
	line = "safe-upgrade --recover: the apply was interrupted; " + line
	fmt.Fprintln(out, line)
	if attempted != nil && attempted.Info.Status.IsPending() {
		was := attempted.Info.Status
		uerr := editRecord(cfg, ns, name, attempted.Version, func(info *release.Info) {
			info.Status = release.StatusFailed
			info.Description = fmt.Sprintf("Upgrade %q interrupted (%s)", name, line)
		})
		if uerr != nil {
			return fmt.Errorf("release %q: marking the pending revision %d failed: %w", name, attempted.Version, uerr)
		}
		fmt.Fprintf(out, "Revision %d was left %s: marked failed\n", attempted.Version, was)
	} else if attempted != nil && attempted.Info.Status == release.StatusFailed {
		if derr := editRecord(cfg, ns, name, attempted.Version, func(info *release.Info) {
			info.Description = strings.TrimSpace(info.Description + " (" + line + ")")
		}); derr != nil {
			fmt.Fprintf(out, "warning: adding the restore to the description of revision %d: %v\n", attempted.Version, derr)
		}
	}
	if err != nil {
		return fmt.Errorf("release %q in namespace %s: %w", name, ns, err)
	}
	return nil
}
