// Package render renders the next revision of a release exactly as
// `helm upgrade` (or `helm upgrade --install`) would, without writing
// anything to the cluster and without the cost of Helm's kube-client Build.
package render

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"github.com/spf13/pflag"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/cli/values"
)

// Options are the render flags of `helm upgrade`, with Helm's semantics.
type Options struct {
	// Values are the user-supplied values: -f/--values, --set, --set-string,
	// --set-file, --set-json, --set-literal.
	Values values.Options

	// Version is the chart version constraint (--version). When empty and
	// Devel is set, ">0.0.0-0" is used, as Helm does.
	Version string
	// Devel also considers development versions (--devel).
	Devel bool
	// Repo locates the chart: --repo and the repository credentials and TLS
	// options of `helm upgrade`. Repo.Version is used only when Version is
	// empty.
	Repo action.ChartPathOptions

	// Install renders an install when the release does not exist (-i/--install).
	Install bool
	// CreateNamespace creates the release namespace on install (--create-namespace).
	CreateNamespace bool
	// ReuseValues, ResetValues and ResetThenReuseValues select how the
	// previous release's values are combined with the new ones, as in
	// `helm upgrade`.
	ReuseValues          bool
	ResetValues          bool
	ResetThenReuseValues bool

	// PostRenderer is the path of a post-renderer executable (--post-renderer),
	// run with PostRendererArgs (--post-renderer-args).
	PostRenderer     string
	PostRendererArgs []string

	SkipCRDs             bool // --skip-crds
	SkipSchemaValidation bool // --skip-schema-validation
	DisableHooks         bool // --no-hooks

	// SubNotes renders the subcharts' NOTES.txt too (--render-subchart-notes).
	SubNotes bool
	// EnableDNS lets templates resolve names with getHostByName (--enable-dns).
	EnableDNS bool
	// Labels are added to the release record's labels, merged with the last
	// release's; a value "null" removes one (-l/--labels).
	Labels map[string]string
	// DependencyUpdate runs `helm dependency update` on the chart when its
	// charts/ directory does not satisfy Chart.yaml (--dependency-update).
	DependencyUpdate bool
	// TakeOwnership adopts objects that exist in the cluster without (or
	// with another release's) Helm ownership metadata (--take-ownership).
	TakeOwnership bool
	// HideSecret hides Secrets in the report, as `helm upgrade --dry-run
	// --hide-secret` hides them in its output (--hide-secret). It is not
	// given to the render: Helm would drop the Secrets from the manifest
	// and the plan would see them deleted. Helm accepts it only with a dry run.
	HideSecret bool
	// HideNotes does not print the chart's NOTES after an apply (--hide-notes).
	HideNotes bool

	// Timeout, Wait and Atomic do not change the render; they are carried to
	// Helm's action so that the apply step runs with the same settings.
	Timeout time.Duration // --timeout
	Wait    bool          // --wait
	Atomic  bool          // --atomic

	// Apply-only flags, carried to Helm's action like Timeout.
	WaitForJobs              bool // --wait-for-jobs: with --wait, also wait for Jobs to complete
	CleanupOnFail            bool // --cleanup-on-fail: delete the objects this upgrade created if it fails
	RecreatePods             bool // --recreate-pods (deprecated in Helm): restart the pods of changed workloads
	DisableOpenAPIValidation bool // --disable-openapi-validation: Helm builds the manifest without schema validation
	// MaxHistory limits the revisions kept per release; 0 means no limit
	// (--history-max; default HELM_MAX_HISTORY, else 10).
	MaxHistory int
	// ServerSide is Helm 4's --server-side: "auto" (ServerSideAuto, the
	// default; "" means the same) keeps the apply method recorded in the
	// release, "true" plans server-side apply, "false" Helm 3's client-side
	// patch. See Result.ServerSideApply.
	ServerSide string
	// ForceConflicts is Helm 4's --force-conflicts: a server-side apply
	// takes the fields other field managers own instead of failing.
	ForceConflicts bool

	// Description is the release description (--description).
	Description string

	// KubeVersion and APIVersions describe the target cluster of an offline
	// plan (--kube-version, --api-versions), as `helm template` reads them;
	// see OfflineTarget. A live plan asks the cluster instead.
	KubeVersion string
	APIVersions []string

	// Namespace is the release namespace. Empty means settings.Namespace()
	// (-n/--namespace, HELM_NAMESPACE, the kubeconfig context). The CLI owns
	// the flag; AddFlags does not register it.
	Namespace string
}

// DefaultTimeout is the default of --timeout, as in `helm upgrade`.
const DefaultTimeout = 300 * time.Second

// AddFlags registers the render flags on fs with the names, defaults and help
// of `helm upgrade`. It does not register -n/--namespace, --kube-context or
// --kubeconfig.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
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
	fs.DurationVar(&o.Timeout, "timeout", DefaultTimeout, "time to wait for any individual Kubernetes operation (like Jobs for hooks)")
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
	fs.StringVar(&o.KubeVersion, "kube-version", "", "with --offline: Kubernetes version used for Capabilities.KubeVersion, the chart's kubeVersion check and the removed-API check (default "+DefaultKubeVersion+")")
	fs.StringSliceVarP(&o.APIVersions, "api-versions", "a", []string{}, "with --offline: Kubernetes api versions used for Capabilities.APIVersions, in addition to the built-in ones the target version serves")
	fs.StringVar(&o.ServerSide, "server-side", ServerSideAuto, "must be \"true\", \"false\" or \"auto\". Object updates run in the server instead of the client (\"auto\" defaults the value from the previous chart release's method)")
	fs.BoolVar(&o.ForceConflicts, "force-conflicts", false, "if set server-side apply will force changes against conflicts")

	// post-renderer (helm's bindPostRenderFlag)
	fs.StringVar(&o.PostRenderer, "post-renderer", "", "the path to an executable to be used for post rendering. If it exists in $PATH, the binary will be used, otherwise it will try to look for the executable at the given path")
	fs.StringArrayVar(&o.PostRendererArgs, "post-renderer-args", []string{}, "an argument to the post-renderer (can specify multiple)")
}

// defaultMaxHistory is helm's default for --history-max: HELM_MAX_HISTORY,
// else 10 (helm's cli.EnvSettings reads it the same way).
func defaultMaxHistory() int {
	return cli.New().MaxHistory
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

// NewInstall returns Helm's install action set up with these flags, as
// `helm upgrade --install` sets it up (cmd/helm/upgrade.go: --history-max,
// --cleanup-on-fail and --recreate-pods do not reach an install). Planning
// and applying share it; each then sets what differs (dry run,
// post-renderer, description, force). HideSecret is never set: see Options.
func (o *Options) NewInstall(cfg *action.Configuration, name, namespace string) *action.Install {
	inst := action.NewInstall(cfg)
	inst.ReleaseName = name
	inst.Namespace = namespace
	o.SetInstall(inst)
	o.setHelm3(&inst.Wait, &inst.Atomic, &inst.Description, &inst.DependencyUpdate)
	return inst
}

// NewUpgrade returns Helm's upgrade action set up with these flags; see
// NewInstall.
func (o *Options) NewUpgrade(cfg *action.Configuration, namespace string) *action.Upgrade {
	up := action.NewUpgrade(cfg)
	up.Install = o.Install
	up.Namespace = namespace
	o.SetUpgrade(up)
	o.setHelm3(&up.Wait, &up.Atomic, &up.Description, &up.DependencyUpdate)
	up.Recreate = o.RecreatePods
	return up
}

// setHelm3 sets the fields only Helm 3's actions have (Helm 4 turned Wait
// and Atomic into WaitStrategy and RollbackOnFailure).
func (o *Options) setHelm3(wait, atomic *bool, description *string, dependencyUpdate *bool) {
	*wait, *atomic, *description, *dependencyUpdate = o.Wait, o.Atomic, o.Description, o.DependencyUpdate
}

// actionFields is the one mapping of these options onto Helm's install and
// upgrade actions, Helm 3's and Helm 4's alike: each action field name and
// its value. Helm 3 and Helm 4 actions are distinct types whose shared
// fields have the same names, so the mapping sets them by name.
func (o *Options) actionFields(upgrade bool) map[string]interface{} {
	f := map[string]interface{}{
		"Devel": o.Devel, "DisableHooks": o.DisableHooks, "SkipCRDs": o.SkipCRDs,
		"SkipSchemaValidation": o.SkipSchemaValidation, "DisableOpenAPIValidation": o.DisableOpenAPIValidation,
		"Timeout": o.TimeLimit(), "WaitForJobs": o.WaitForJobs, "SubNotes": o.SubNotes, "HideNotes": o.HideNotes,
		"Labels": o.Labels, "EnableDNS": o.EnableDNS, "TakeOwnership": o.TakeOwnership,
	}
	if !upgrade {
		f["CreateNamespace"] = o.CreateNamespace
		return f
	}
	for k, v := range map[string]interface{}{
		"ResetValues": o.ResetValues, "ReuseValues": o.ReuseValues, "ResetThenReuseValues": o.ResetThenReuseValues,
		"MaxHistory": o.MaxHistory, "CleanupOnFail": o.CleanupOnFail,
	} {
		f[k] = v
	}
	return f
}

// SetInstall sets these options on inst, a Helm 3 or Helm 4 *action.Install.
func (o *Options) SetInstall(inst interface{}) { setFields(inst, o.actionFields(false)) }

// SetUpgrade sets these options on up, a Helm 3 or Helm 4 *action.Upgrade.
func (o *Options) SetUpgrade(up interface{}) { setFields(up, o.actionFields(true)) }

// setFields sets each named field of the struct act points to. A field the
// action lacks or of another type is a programming error (a Helm version
// that renamed it), which the unit tests of both Helm versions hit.
func setFields(act interface{}, fields map[string]interface{}) {
	v := reflect.ValueOf(act).Elem()
	for name, value := range fields {
		f := v.FieldByName(name)
		if !f.IsValid() || !f.CanSet() {
			panic(fmt.Sprintf("render: %s has no settable field %s", v.Type(), name))
		}
		f.Set(reflect.ValueOf(value).Convert(f.Type()))
	}
}

// TimeLimit is --timeout, or helm upgrade's default when unset: the one
// place that default is applied (render, plan and apply all use it).
func (o *Options) TimeLimit() time.Duration {
	if o.Timeout <= 0 {
		return DefaultTimeout
	}
	return o.Timeout
}
