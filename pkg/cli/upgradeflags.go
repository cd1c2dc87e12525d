package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	helmcli "helm.sh/helm/v3/pkg/cli"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/report"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/savedplan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/verb"
)

// The upgrade command's flags: every flag it accepts is registered and
// checked here (Helm's global flags by helm's EnvSettings). Complete turns
// them into the actions' requests (verb.PlanRequest, report.Request,
// the gate's acks); no stage package knows a flag.

// runFlags are the run's own flags (helm upgrade's render flags are
// render.Options): whether the plan is applied, how, saved plans, offline
// mode and --ignore.
type runFlags struct {
	// DryRun plans and reports only (--dry-run in any of helm upgrade's
	// spellings, see dryRunFlag; implied by Offline).
	DryRun bool
	// DetailedExitcode: with DryRun, exit 3 when changes pass the gate.
	DetailedExitcode bool
	// FailOnRegenerated: with DetailedExitcode, updates of fields
	// regenerated on every render count as changes (exit 3).
	FailOnRegenerated bool
	// FailOnStaleConfig: a changed ConfigMap or Secret that running pods
	// will not see blocks the upgrade (exit 2).
	FailOnStaleConfig bool
	// Apply is how the plan is applied: --force-replace (--force),
	// --no-watch, --watch-timeout.
	Apply verb.ApplyMode
	// Rules are the ignore rules: --ignore and --rules.
	Rules planner.UserRules
	// ServerDryRun is --server-dry-run: needed (default) or all.
	ServerDryRun string
	// SavedPlanToWrite (--plan-out) is the file the plan is saved to;
	// SavedPlanToRead (--plan) the saved plan to apply, refused when older
	// than PlanMaxAge (0: no limit).
	SavedPlanToWrite, SavedPlanToRead string
	PlanMaxAge                        time.Duration
	// PlanRecipients (--plan-recipient) are the age recipients --plan-out
	// encrypts to; PlanUnencrypted (--plan-unencrypted) allows a plan in
	// clear. PlanKeys are all the saved plan's keys, the environment's
	// included (set by Complete).
	PlanRecipients  []string
	PlanUnencrypted bool
	PlanKeys        savedplan.Keys
	// Recover settles the journal an interrupted apply left; Yes confirms
	// it without asking (CI).
	Recover, Yes bool
	// Offline compares the base From with the chart without any cluster
	// access (pre-merge mode).
	Offline bool
	From    verb.OfflineBase
}

// addFlags registers the run's flags.
func (f *runFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.From.Chart, "from-chart", "", "with --offline: the base chart (directory, archive or reference)")
	fs.StringArrayVar(&f.From.Values, "from-values", nil, "with --offline --from-chart: values files for the base render (repeatable)")
	fs.StringVar(&f.From.Manifest, "from-manifest", "", "with --offline: the base as a rendered manifest file")
	f.addPlanFlags(fs)
	fs.BoolVar(&f.FailOnRegenerated, "fail-on-regenerated", false, "with --detailed-exitcode: count updates of fields regenerated on every render (a generated password the upgrade rotates) as changes (exit 3)")
	fs.BoolVar(&f.FailOnStaleConfig, "fail-on-stale-config", false, "block (exit 2, nothing written) when a changed ConfigMap or Secret is read through env, envFrom or a subPath mount by a workload whose pod template does not change: its running pods would keep the old value until they restart")
	addApplyFlags(fs, &f.Apply)
	fs.BoolVar(&f.Apply.RestartStale, "restart-stale", false, "after Helm's upgrade, restart (as kubectl rollout restart does) the release's Deployments, StatefulSets and DaemonSets whose running pods would keep a changed ConfigMap's or Secret's old value (read through env, envFrom or a subPath mount); planned and shown as rolling before the gate")
	fs.StringArrayVar(&f.Rules.Ignore, "ignore", nil, "show but do not count changes at a field path: FIELD_PATH, KIND:FIELD_PATH or KIND/NAME:FIELD_PATH, [*] for any index or key (repeatable); never for a field the server refuses to change")
	fs.StringVar(&f.Rules.File, "rules", "", "rules file (YAML: ignore: [RULE, ...], rules of --ignore's form); default: "+planner.RulesFileName+" in the chart's directory, when there is one")
	f.addSavedPlanFlags(fs)
	fs.BoolVar(&f.Recover, "recover", false, "after an interrupted apply (killed mid-way): restore the objects it deleted for recreation from its journal, mark the revision it left pending as failed, remove the journal")
	fs.BoolVar(&f.Yes, "yes", false, "with --recover: restore without asking (CI); what it re-creates is still printed first")
	fs.BoolVar(&f.Offline, "offline", false, "plan without cluster access: compare --from-chart or --from-manifest (base) with CHART (head); implies --dry-run")
}

// addSavedPlanFlags registers the saved plan's flags (upgrade, rollback):
// --plan-out, --plan and their keys and age limit.
func (f *runFlags) addSavedPlanFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.SavedPlanToWrite, "plan-out", "", "save the plan (the exact render, what it was planned against, the acknowledgements, the report) to FILE, encrypted with age to --plan-recipient or "+savedplan.EnvRecipients+" (or to "+savedplan.EnvPassphrase+")")
	fs.StringVar(&f.SavedPlanToRead, "plan", "", "apply exactly the plan saved in FILE, decrypted with "+savedplan.EnvIdentity+" (an identity file or the key) or "+savedplan.EnvPassphrase+"; refused if it was edited, made for another cluster or other flags, or if the release, the chart, the values or a changed object moved since")
	fs.StringArrayVar(&f.PlanRecipients, "plan-recipient", nil, "with --plan-out: an age recipient (age1…) to encrypt the saved plan to (repeatable; added to "+savedplan.EnvRecipients+")")
	fs.BoolVar(&f.PlanUnencrypted, "plan-unencrypted", false, "with --plan-out: save the plan in clear (Secret values readable, edits detectable only by a checksum); with --plan: accept such a plan")
	fs.DurationVar(&f.PlanMaxAge, "plan-max-age", 0, "with --plan: refuse a saved plan older than this (e.g. 1h); 0: no limit")
}

// completeSaved sets the saved plan's keys (--plan-recipient,
// --plan-unencrypted and the environment's) and, with --plan, returns the
// saved plan, checked for release in namespace (savedplan.Verify), with
// the acknowledgements it recorded added to acks; a plan saved in clear
// is warned about on w. Without --plan it returns nil.
func (f *runFlags) completeSaved(w io.Writer, release, namespace string, acks *gate.Acks) (*savedplan.Plan, error) {
	f.PlanKeys = savedplan.KeysFromEnv(os.Getenv, f.PlanRecipients, f.PlanUnencrypted)
	f.PlanKeys.Warnings = w
	if f.SavedPlanToRead == "" {
		return nil, nil
	}
	saved, err := savedplan.Verify(f.SavedPlanToRead, f.PlanKeys, release, namespace)
	if err != nil {
		return nil, err
	}
	if saved.InClear {
		fmt.Fprintf(w, "WARNING: --plan-unencrypted: %s is not encrypted; only its checksum says it was not edited\n", f.SavedPlanToRead)
	}
	acks.Add(saved.Acks())
	return saved, nil
}

// addPlanFlags registers the flags of every verb that plans before it
// writes (upgrade, rollback): --dry-run, --detailed-exitcode and
// --server-dry-run.
func (f *runFlags) addPlanFlags(fs *pflag.FlagSet) {
	fs.Var(&dryRunFlag{on: &f.DryRun}, "dry-run", "plan and report only; never write to the cluster. Accepts helm upgrade's values: --dry-run, --dry-run=client|server|true (the plan always dry-runs on the server), --dry-run=false|none")
	fs.Lookup("dry-run").NoOptDefVal = "client"
	fs.BoolVar(&f.DetailedExitcode, "detailed-exitcode", false, "with --dry-run: exit 0 when nothing changes, 2 when blocked, 3 when changes pass the gate")
	fs.StringVar(&f.ServerDryRun, "server-dry-run", string(planner.ServerDryRunNeeded), "which updates the plan sends to the API server as dry-runs: needed (where its answer can differ from what the tool derives: see docs/performance.md) or all")
}

// addApplyFlags registers the apply flags of helm upgrade that are not
// render flags — Helm 4's --force-replace and Helm 3's name of it, --force
// (both set Force; off unless given) — and the rollout watch's.
func addApplyFlags(fs *pflag.FlagSet, m *verb.ApplyMode) {
	fs.BoolVar(&m.Force, "force-replace", false, "pass --force-replace to Helm: it replaces every object that exists with PUT, changed or not (client-side apply only); the plan checks each PUT with a dry-run and is still gated")
	fs.BoolVar(&m.Force, "force", false, "Helm 3's name of --force-replace")
	fs.BoolVar(&m.Watch.Off, "no-watch", false, "end when Helm returns, without watching the rollout (pods replaced, ready, failures) nor checking the prediction")
	fs.DurationVar(&m.Watch.Timeout, "watch-timeout", 0, "how long to watch the rollout after Helm returns before calling what is not ready a failure (default: --timeout)")
}

// validateFrom checks the base flags: exactly one base, offline only.
func (f *runFlags) validateFrom() error {
	b := f.From
	if f.Offline {
		if (b.Chart == "") == (b.Manifest == "") {
			return errors.New("--offline needs exactly one of --from-chart or --from-manifest")
		}
	} else if b.Chart != "" || b.Manifest != "" || len(b.Values) > 0 {
		return errors.New("--from-chart, --from-values and --from-manifest need --offline")
	}
	if len(b.Values) > 0 && b.Chart == "" {
		return errors.New("--from-values needs --from-chart")
	}
	return nil
}

// validate checks the combinations of the run's flags and the render flags
// r (after Complete).
func (f *runFlags) validate(r render.Options) error {
	if err := f.validateFrom(); err != nil {
		return err
	}
	for _, bad := range []struct {
		when bool
		msg  string
	}{
		{!f.Offline && (r.KubeVersion != "" || len(r.APIVersions) > 0), "--kube-version and --api-versions need --offline; against a cluster, the cluster's own are used"},
		{f.Offline && (f.SavedPlanToRead != "" || f.SavedPlanToWrite != ""), "--plan and --plan-out need a cluster; they cannot be used with --offline"},
		{f.Recover && (f.DryRun || f.SavedPlanToRead != "" || f.SavedPlanToWrite != ""), "--recover only resolves an interrupted apply; it cannot be used with --dry-run, --offline, --plan or --plan-out"},
		{f.Yes && !f.Recover, "--yes confirms --recover only; destructive changes are acknowledged with --ack, --ack-file or --ack-all-destructive"},
		{r.HideSecret && !f.DryRun, "--hide-secret hides Secrets from the report of a --dry-run; as in helm upgrade, it needs --dry-run"},
		{f.DetailedExitcode && !f.DryRun, "--detailed-exitcode needs --dry-run"},
		{f.FailOnRegenerated && !f.DetailedExitcode, "--fail-on-regenerated needs --dry-run --detailed-exitcode"},
	} {
		if bad.when {
			return errors.New(bad.msg)
		}
	}
	if err := f.validateSaved(); err != nil {
		return err
	}
	if err := render.ValidateServerSide(r.ServerSide); err != nil {
		return err
	}
	if f.Apply.Force && r.ForceConflicts {
		return errors.New("--force-replace (--force) and --force-conflicts cannot be used together (as in Helm 4)")
	}
	return nil
}

// validateSaved checks the saved plan's flags (upgrade, rollback,
// uninstall) against each other and --dry-run.
func (f *runFlags) validateSaved() error {
	for _, bad := range []struct {
		when bool
		msg  string
	}{
		{f.PlanMaxAge != 0 && f.SavedPlanToRead == "", "--plan-max-age needs --plan"},
		{(len(f.PlanRecipients) > 0) && f.SavedPlanToWrite == "", "--plan-recipient needs --plan-out"},
		{f.PlanUnencrypted && f.SavedPlanToWrite == "" && f.SavedPlanToRead == "", "--plan-unencrypted needs --plan-out or --plan"},
		{f.SavedPlanToRead != "" && f.DryRun, "--plan applies a saved plan; it cannot be used with --dry-run"},
	} {
		if bad.when {
			return errors.New(bad.msg)
		}
	}
	if f.SavedPlanToWrite != "" {
		if err := f.PlanKeys.ValidateForWrite(); err != nil {
			return err
		}
		if err := savedplan.CheckOut(f.SavedPlanToWrite); err != nil {
			return err
		}
	}
	return nil
}

// dryRunFlag is --dry-run with helm upgrade's spellings: alone it means
// "client" (Helm's NoOptDefVal); "client", "server" and "true" plan without
// writing; "false", "none" and "" apply. Both dry-run modes plan the same
// way here: the planner always asks the server with dryRun=All (Helm's
// "server"), which is what a plan needs to see immutable-field refusals.
type dryRunFlag struct {
	on   *bool
	mode string
}

func (f *dryRunFlag) String() string {
	if f.mode == "" {
		return strconv.FormatBool(*f.on)
	}
	return f.mode
}

func (f *dryRunFlag) Set(v string) error {
	switch v {
	case "client", "server", "true":
		*f.on = true
	case "false", "none", "":
		*f.on = false
	default:
		return fmt.Errorf("invalid dry-run value %q: want one of false, true, none, client, server (as helm upgrade)", v)
	}
	f.mode = v
	return nil
}

func (f *dryRunFlag) Type() string { return "string" }

// addReportFlags registers -o/--output, --diff-context and -p/--diff with
// their defaults, and takes GITHUB_ACTIONS (in a GitHub Actions job the
// report adds the job's annotations), as Helm's flags take HELM_*: every
// verb that writes a plan's report takes the same.
func addReportFlags(fs *pflag.FlagSet, r *report.Request) {
	r.GitHubActions = os.Getenv("GITHUB_ACTIONS") == "true"
	fs.StringVarP(&r.Output, "output", "o", report.FormatText, "report format: "+report.FormatList())
	fs.IntVar(&r.DiffContext, "diff-context", report.DefaultContext, "lines of context in diffs")
	fs.BoolVarP(&r.WholeObjects, "diff", "p", false, "show the whole manifest of each object to create or delete too (the text and Markdown reports leave them out; JSON has them always)")
}

// validateReport checks the report flags' values.
func validateReport(r report.Request) error {
	if !report.IsFormat(r.Output) {
		return fmt.Errorf("--output %q: want %s", r.Output, report.FormatList())
	}
	if r.DiffContext < 0 {
		return fmt.Errorf("--diff-context %d: must be 0 or more", r.DiffContext)
	}
	return nil
}

// ackFlags are the gate's flags.
type ackFlags struct {
	Acks []string // --ack
	File string   // --ack-file
	// All acknowledges every destructive change (--ack-all-destructive).
	All bool
}

// addFlags registers --ack, --ack-file and --ack-all-destructive.
func (f *ackFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.Acks, "ack", nil, "acknowledge a destructive change: KIND/NAME, KIND/NAMESPACE/NAME, optionally @FINGERPRINT (repeatable)")
	fs.StringVar(&f.File, "ack-file", "", "YAML list of acknowledgements {kind, namespace, name, fingerprint, reason}")
	fs.BoolVar(&f.All, "ack-all-destructive", false, "acknowledge every destructive change (emergencies only; each is named in a warning)")
}

// collect returns the acks given as --ack values and in --ack-file.
func (f ackFlags) collect() (*gate.Acks, error) {
	acks, err := gate.ParseAcks(f.Acks)
	if err != nil || f.File == "" {
		return acks, err
	}
	fromFile, err := gate.ReadAckFile(f.File)
	if err != nil {
		return nil, err
	}
	acks.Add(fromFile)
	return acks, nil
}

// addRenderFlags registers helm upgrade's render flags into o, with the
// names, defaults and help of `helm upgrade`. It does not register
// -n/--namespace, --kube-context or --kubeconfig (Helm's settings do).
func addRenderFlags(fs *pflag.FlagSet, o *render.Options) {
	// values (helm's addValueOptionsFlags)
	v := &o.Values
	fs.StringSliceVarP(&v.ValueFiles, "values", "f", []string{}, "specify values in a YAML file or a URL (can specify multiple)")
	fs.StringArrayVar(&v.Values, "set", []string{}, "set values on the command line (can specify multiple or separate values with commas: key1=val1,key2=val2)")
	fs.StringArrayVar(&v.StringValues, "set-string", []string{}, "set STRING values on the command line (can specify multiple or separate values with commas: key1=val1,key2=val2)")
	fs.StringArrayVar(&v.FileValues, "set-file", []string{}, "set values from respective files specified via the command line (can specify multiple or separate values with commas: key1=path1,key2=path2)")
	fs.StringArrayVar(&v.JSONValues, "set-json", []string{}, "set JSON values on the command line (can specify multiple or separate values with commas: key1=jsonval1,key2=jsonval2)")
	fs.StringArrayVar(&v.LiteralValues, "set-literal", []string{}, "set a literal STRING value on the command line")

	// chart location (helm's addChartPathOptionsFlags)
	c := &o.Repo
	fs.StringVar(&o.Version, "version", "", "specify a version constraint for the chart version to use. This constraint can be a specific tag (e.g. 1.1.1) or it may reference a valid range (e.g. ^2.0.0). If this is not specified, the latest version is used")
	fs.BoolVar(&c.Verify, "verify", false, "verify the package before using it")
	fs.StringVar(&c.Keyring, "keyring", defaultKeyring(), "location of public keys used for verification")
	fs.StringVar(&c.RepoURL, "repo", "", "chart repository url where to locate the requested chart")
	fs.StringVar(&c.Username, "username", "", "chart repository username where to locate the requested chart")
	fs.StringVar(&c.Password, "password", "", "chart repository password where to locate the requested chart")
	fs.StringVar(&c.CertFile, "cert-file", "", "identify HTTPS client using this SSL certificate file")
	fs.StringVar(&c.KeyFile, "key-file", "", "identify HTTPS client using this SSL key file")
	fs.BoolVar(&c.InsecureSkipTLSverify, "insecure-skip-tls-verify", false, "skip tls certificate checks for the chart download")
	fs.BoolVar(&c.PlainHTTP, "plain-http", false, "use insecure HTTP connections for the chart download")
	fs.StringVar(&c.CaFile, "ca-file", "", "verify certificates of HTTPS-enabled servers using this CA bundle")
	fs.BoolVar(&c.PassCredentialsAll, "pass-credentials", false, "pass credentials to all domains")

	// upgrade (helm's newUpgradeCmd)
	fs.BoolVarP(&o.Install, "install", "i", false, "if a release by this name doesn't already exist, run an install")
	fs.BoolVar(&o.CreateNamespace, "create-namespace", false, "if --install is set, create the release namespace if not present")
	fs.BoolVar(&o.Devel, "devel", false, "use development versions, too. Equivalent to version '>0.0.0-0'. If --version is set, this is ignored")
	fs.BoolVar(&o.DisableHooks, "no-hooks", false, "disable pre/post upgrade hooks")
	fs.BoolVar(&o.SkipCRDs, "skip-crds", false, "if set, no CRDs will be installed when an upgrade is performed with install flag enabled. By default, CRDs are installed if not already present, when an upgrade is performed with install flag enabled")
	fs.DurationVar(&o.Timeout, "timeout", render.DefaultTimeout, "time to wait for any individual Kubernetes operation (like Jobs for hooks)")
	fs.BoolVar(&o.ResetValues, "reset-values", false, "when upgrading, reset the values to the ones built into the chart")
	fs.BoolVar(&o.ReuseValues, "reuse-values", false, "when upgrading, reuse the last release's values and merge in any overrides from the command line via --set and -f. If '--reset-values' is specified, this is ignored")
	fs.BoolVar(&o.ResetThenReuseValues, "reset-then-reuse-values", false, "when upgrading, reset the values to the ones built into the chart, apply the last release's values and merge in any overrides from the command line via --set and -f. If '--reset-values' or '--reuse-values' is specified, this is ignored")
	fs.BoolVar(&o.Wait, "wait", false, "if set, will wait until all Pods, PVCs, Services, and minimum number of Pods of a Deployment, StatefulSet, or ReplicaSet are in a ready state before marking the release as successful. It will wait for as long as --timeout")
	fs.BoolVar(&o.Atomic, "atomic", false, "if set, upgrade process rolls back changes made in case of failed upgrade. The --wait flag will be set automatically if --atomic is used")
	fs.BoolVar(&o.SkipSchemaValidation, "skip-schema-validation", false, "if set, disables JSON schema validation")
	fs.StringVar(&o.Description, "description", "", "add a custom description")
	fs.BoolVar(&o.HideSecret, "hide-secret", false, "hide Kubernetes Secrets when also using the --dry-run flag")
	fs.BoolVar(&o.RecreatePods, "recreate-pods", false, "performs pods restart for the resource if applicable")
	_ = fs.MarkDeprecated("recreate-pods", "functionality will no longer be updated. Consult the documentation for other methods to recreate pods")
	fs.BoolVar(&o.DisableOpenAPIValidation, "disable-openapi-validation", false, "if set, the upgrade process will not validate rendered templates against the Kubernetes OpenAPI Schema")
	fs.BoolVar(&o.WaitForJobs, "wait-for-jobs", false, "if set and --wait enabled, will wait until all Jobs have been completed before marking the release as successful. It will wait for as long as --timeout")
	fs.IntVar(&o.MaxHistory, "history-max", defaultMaxHistory(), "limit the maximum number of revisions saved per release. Use 0 for no limit")
	fs.BoolVar(&o.CleanupOnFail, "cleanup-on-fail", false, "allow deletion of new resources created in this upgrade when upgrade fails")
	fs.BoolVar(&o.SubNotes, "render-subchart-notes", false, "if set, render subchart notes along with the parent")
	fs.BoolVar(&o.HideNotes, "hide-notes", false, "if set, do not show notes in upgrade output. Does not affect presence in chart metadata")
	fs.StringToStringVarP(&o.Labels, "labels", "l", nil, "Labels that would be added to release metadata. Should be separated by comma. Original release labels will be merged with upgrade labels. You can unset label using null.")
	fs.BoolVar(&o.DependencyUpdate, "dependency-update", false, "update dependencies if they are missing before installing the chart")
	fs.BoolVar(&o.EnableDNS, "enable-dns", false, "enable DNS lookups when rendering templates")
	fs.BoolVar(&o.TakeOwnership, "take-ownership", false, "if set, upgrade will ignore the check for helm annotations and take ownership of the existing resources")

	// target cluster, offline only (helm's `template` command)
	fs.StringVar(&o.KubeVersion, "kube-version", "", "with --offline: Kubernetes version used for Capabilities.KubeVersion, the chart's kubeVersion check and the removed-API check (default "+render.DefaultKubeVersion+")")
	fs.StringSliceVarP(&o.APIVersions, "api-versions", "a", []string{}, "with --offline: Kubernetes api versions used for Capabilities.APIVersions, in addition to the built-in ones the target version serves")
	fs.StringVar(&o.ServerSide, "server-side", render.ServerSideAuto, "must be \"true\", \"false\" or \"auto\". Object updates run in the server instead of the client (\"auto\" defaults the value from the previous chart release's method)")
	fs.BoolVar(&o.ForceConflicts, "force-conflicts", false, "if set server-side apply will force changes against conflicts")

	// post-renderer (helm's bindPostRenderFlag)
	fs.StringVar(&o.PostRenderer, "post-renderer", "", "the path to an executable to be used for post rendering. If it exists in $PATH, the binary will be used, otherwise it will try to look for the executable at the given path")
	fs.StringArrayVar(&o.PostRendererArgs, "post-renderer-args", []string{}, "an argument to the post-renderer (can specify multiple)")
}

// defaultMaxHistory is helm's default for --history-max: HELM_MAX_HISTORY,
// else 10 (helm's cli.EnvSettings reads it the same way).
func defaultMaxHistory() int {
	return helmcli.New().MaxHistory
}

// defaultKeyring is helm's default for --keyring.
func defaultKeyring() string {
	if v, ok := os.LookupEnv("GNUPGHOME"); ok {
		return filepath.Join(v, "pubring.gpg")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".gnupg", "pubring.gpg")
}
