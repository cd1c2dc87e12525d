package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/report"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/verb"
)

// RollbackOptions are `rollback RELEASE [REVISION]`: helm rollback,
// planned, gated and applied as an upgrade to the stored revision (see
// verb.Rollback). Once complete it is run by the upgrade's Options, so
// the report, the gate, the prompt, --dry-run and the exit codes are the
// upgrade's.
type RollbackOptions struct {
	*Factory
	// Render holds helm rollback's flags that helm upgrade has too:
	// --timeout, --wait, --wait-for-jobs, --no-hooks, --cleanup-on-fail,
	// --history-max, and Helm 4's --server-side and --force-conflicts.
	Render render.Options
	runFlags
	Report report.Request
	Gate   ackFlags

	// Set by Complete.
	Release  string
	Revision int
	Upgrade  *UpgradeOptions
}

// newRollbackCommand is `rollback RELEASE [REVISION]`.
func newRollbackCommand(f *Factory, runF runFunc) *cobra.Command {
	o := &RollbackOptions{Factory: f}
	cmd := recordedCommand(&cobra.Command{
		Use:   "rollback RELEASE [REVISION]",
		Short: "Plan, gate and apply helm rollback of RELEASE to REVISION (default: the previous revision)",
		Long: `Roll RELEASE back to REVISION (default: the revision before the last, as
helm rollback) through Helm's own rollback action, planned first: the last
revision's manifest, REVISION's and the live objects are compared and every
object classified as for an upgrade. What REVISION lacks is deleted (unless
it carries helm.sh/resource-policy: keep), and a deleted claim's data loss is
destructive; fields changed since REVISION are patched back, and an
immutable one is recreate-required. Destructive changes block until
acknowledged (--ack, --ack-file, or the release name typed at the prompt);
--dry-run plans and writes nothing. The history then reads "Rollback to
REVISION", and the rollout is watched as after an upgrade.`,
		Args: rollbackArgs,
	}, f, "rollback", o, runF)
	o.addFlags(cmd.Flags())
	return cmd
}

// addFlags registers Helm's global flags, helm rollback's own (with the
// meaning each name has in helm upgrade), and the plan's, report's, gate's
// and apply's.
func (o *RollbackOptions) addFlags(fs *pflag.FlagSet) {
	o.Settings.AddFlags(fs)
	r := &o.Render
	fs.DurationVar(&r.Timeout, "timeout", render.DefaultTimeout, "time to wait for any individual Kubernetes operation (like Jobs for hooks)")
	fs.BoolVar(&r.Wait, "wait", false, "if set, will wait until all Pods, PVCs, Services, and minimum number of Pods of a Deployment, StatefulSet, or ReplicaSet are in a ready state before marking the release as successful. It will wait for as long as --timeout")
	fs.BoolVar(&r.WaitForJobs, "wait-for-jobs", false, "if set and --wait enabled, will wait until all Jobs have been completed before marking the release as successful. It will wait for as long as --timeout")
	fs.BoolVar(&r.DisableHooks, "no-hooks", false, "prevent hooks from running during rollback")
	fs.BoolVar(&r.CleanupOnFail, "cleanup-on-fail", false, "allow deletion of new resources created in this rollback when rollback fails")
	fs.IntVar(&r.MaxHistory, "history-max", defaultMaxHistory(), "limit the maximum number of revisions saved per release. Use 0 for no limit")
	// Helm 4's (its help text); refused on a Helm 3 release, whose helm
	// rollback has neither (render.Result.CheckRollbackFlags).
	fs.StringVar(&r.ServerSide, "server-side", render.ServerSideAuto, "must be \"true\", \"false\" or \"auto\". Object updates run in the server instead of the client (\"auto\" defaults the value from the previous chart release's method)")
	fs.BoolVar(&r.ForceConflicts, "force-conflicts", false, "if set server-side apply will force changes against conflicts")
	o.addPlanFlags(fs)
	o.addSavedPlanFlags(fs)
	addApplyFlags(fs, &o.Apply)
	addReportFlags(fs, &o.Report)
	o.Gate.addFlags(fs)
}

// rollbackArgs accepts RELEASE [REVISION]: a Helm release name (so that
// `rollback ./chart` stays the upgrade of the release "rollback", see
// route) and a revision number, 0 or none for the previous one.
func rollbackArgs(_ *cobra.Command, args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return fmt.Errorf("rollback expects RELEASE [REVISION], got %d argument(s); see --help", len(args))
	}
	if err := chartutil.ValidateReleaseName(args[0]); err != nil {
		return fmt.Errorf("rollback %q: %w", args[0], err)
	}
	if len(args) == 2 {
		if _, err := parseRevision(args[1]); err != nil {
			return err
		}
	}
	return nil
}

// parseRevision reads REVISION as helm rollback does: a whole number, 0
// meaning the previous revision.
func parseRevision(s string) (int, error) {
	return revisionNumber(s, 0, "rollback: REVISION %q is not a revision number (1 or more; 0 for the previous revision)")
}

// Complete reads the arguments and builds the upgrade's Options that run
// the rollback's plan.
func (o *RollbackOptions) Complete(args []string) error {
	o.Release = args[0]
	if len(args) == 2 {
		n, err := parseRevision(args[1])
		if err != nil {
			return err
		}
		o.Revision = n
	}
	u := newUpgradeOptions(o.Factory)
	u.Render, u.runFlags, u.Report, u.Gate = o.Render, o.runFlags, o.Report, o.Gate
	o.Upgrade = u
	// A saved plan of this rollback (--plan): the same revision, the
	// release unmoved (savedplan pins the operation).
	return u.completeRequest(func() verb.PlanRequest {
		return verb.RollbackRequest(o.Release, verb.Rollback{Revision: o.Revision}, u.Render, o.Apply, !o.DryRun)
	})
}

// Validate checks the flags as the upgrade's.
func (o *RollbackOptions) Validate() error { return o.Upgrade.Validate() }

// Run plans the rollback, reports it, gates it and (without --dry-run)
// applies it.
func (o *RollbackOptions) Run(ctx context.Context) error { return o.Upgrade.Run(ctx) }
