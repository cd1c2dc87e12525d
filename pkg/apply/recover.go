package apply

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// RecoverRequest is what --recover needs.
type RecoverRequest struct {
	// Config is Helm's configuration of the release namespace; Cluster the
	// connection that reads and restores.
	Config  *action.Configuration
	Cluster *live.Cluster
	Name    string
	// Namespace is the release namespace.
	Namespace string
	// Timeout bounds the restore (0: render.DefaultTimeout).
	Timeout time.Duration
	// Confirm is asked, with what the recovery will do, before it writes
	// anything; false aborts. nil: no confirmation (--yes).
	Confirm func(plan string) (bool, error)
}

// Recover resolves what an interrupted apply (killed, or whose restore
// failed) left, while the caller holds the release's Lease (taken as every
// writing verb takes it: releasestate.AcquireLease). When the journal's
// revision was deployed, it only removes the journal. Otherwise it checks every
// entry of the journal (checkRestorable: an object of the last deployed
// revision, in the release namespace, as its manifest says) and refuses
// the whole journal, writing nothing, when one fails; it says what it will
// re-create and asks Confirm; then it restores every object the journal
// holds (with its previous spec: orphaned pods and claims are adopted
// again), marks the revision the interrupted apply left pending as failed
// (as Helm's own failure handling would, so no `helm rollback` is needed;
// the deployed revision before it stays deployed) with a description that
// says so, then removes the journal. What it did is printed to out.
// Without a journal it says so and does nothing.
func Recover(ctx context.Context, req RecoverRequest, out io.Writer) error {
	if req.Config == nil || req.Config.Releases == nil || req.Cluster == nil {
		return fmt.Errorf("recover: no release storage or cluster connection")
	}
	return recoverRelease(ctx, req, out)
}

func recoverRelease(ctx context.Context, req RecoverRequest, out io.Writer) error {
	cfg, cluster, name, ns, timeout := req.Config, req.Cluster, req.Name, req.Namespace, req.Timeout
	if timeout <= 0 {
		timeout = render.DefaultTimeout
	}
	j, err := readJournal(ctx, cluster, ns, name)
	if err != nil {
		return fmt.Errorf("release %q in namespace %s: %w", name, ns, err)
	}
	if j == nil {
		fmt.Fprintf(out, "Release %q in namespace %s has no recreate journal: nothing to recover\n", name, ns)
		return nil
	}
	fmt.Fprintf(out, "Release %q in namespace %s: %s\n", name, ns, j.rec.Describe())
	hist, err := releasestate.History(cfg.Releases, name)
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
	deployed, err := trust(j, cfg.Releases, name, ns, cluster)
	if err != nil {
		return err
	}
	todo, err := j.survey(ctx, cluster, deployed)
	if err != nil {
		return fmt.Errorf("release %q in namespace %s: %w", name, ns, err)
	}
	fmt.Fprintf(out, "--recover will:\n%s", todo)
	if req.Confirm != nil {
		ok, err := req.Confirm(todo)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("release %q in namespace %s: recovery not confirmed; nothing was restored or changed", name, ns)
		}
	}
	rec := &recreator{cluster: cluster, out: out, log: func(string, ...interface{}) {}, release: name, namespace: ns, timeout: timeout, poll: pollInterval}
	line, err := rec.undo(j)
	line = "safe-upgrade --recover: the apply was interrupted; " + line
	fmt.Fprintln(out, line)
	if attempted != nil && attempted.Info.Status.IsPending() {
		was := attempted.Info.Status
		uerr := releasestate.EditRecord(cfg, ns, name, attempted.Version, func(info *release.Info) {
			info.Status = release.StatusFailed
			info.Description = releasestate.LineFirst(line, fmt.Sprintf("Upgrade %q interrupted", name))
		})
		if uerr != nil {
			return fmt.Errorf("release %q: marking the pending revision %d failed: %w", name, attempted.Version, uerr)
		}
		fmt.Fprintf(out, "Revision %d was left %s: marked failed\n", attempted.Version, was)
	} else if attempted != nil && attempted.Info.Status == release.StatusFailed {
		if derr := releasestate.DescribeFailed(cfg, ns, name, attempted.Version, line); derr != nil {
			fmt.Fprintf(out, "warning: adding the restore to the description of revision %d: %v\n", attempted.Version, derr)
		}
	}
	if err != nil {
		return fmt.Errorf("release %q in namespace %s: %w", name, ns, err)
	}
	return nil
}

// trust checks every entry of j against the release's last deployed
// revision (checkRestorable) and refuses the journal, naming each entry
// and why, when one fails; it returns that revision's objects.
func trust(j *journal, store *storage.Storage, name, ns string, scoper manifest.Scoper) (*manifest.Set, error) {
	refuse := func(why string) error {
		return fmt.Errorf("release %q in namespace %s: the recreate journal (Secret %s/%s, written by %s as it says) is refused: %s; nothing was restored or changed. Anyone who may write Secrets in namespace %s can write a journal: check who wrote it, and delete it (kubectl delete secret -n %s %s) once the release's objects are as they should be",
			name, ns, ns, releasestate.JournalName(name), j.rec.Writer(), why, ns, ns, releasestate.JournalName(name))
	}
	if j.rec.Release != name || j.rec.Namespace != ns {
		return nil, refuse(fmt.Sprintf("it is for release %q in namespace %s", j.rec.Release, j.rec.Namespace))
	}
	deployed, version, err := releasestate.DeployedOf(store, name, ns, scoper)
	if err != nil {
		return nil, refuse(err.Error())
	}
	var bad []string
	for i := range j.rec.Objects {
		o := &j.rec.Objects[i]
		if err := checkRestorable(&unstructured.Unstructured{Object: o.Object}, ns, deployed, version); err != nil {
			bad = append(bad, fmt.Sprintf("entry %d, %s: %v", i+1, o.ID(), err))
		}
	}
	if len(bad) > 0 {
		return nil, refuse(strings.Join(bad, "; "))
	}
	return deployed, nil
}
