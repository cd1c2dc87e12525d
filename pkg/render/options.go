// Package render renders the next revision of a release exactly as
// `helm upgrade` (or `helm upgrade --install`) would, without writing
// anything to the cluster and without the cost of Helm's kube-client Build.
package render

import (
	"fmt"
	"reflect"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/postrender"
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
	// StorageNamespace is where the Helm configuration reads the release's
	// records when not Namespace (a HelmRelease's storageNamespace): named
	// when they cannot be read. No flag sets it.
	StorageNamespace string `json:"-"`
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
	// PostRender, when set, is a post-renderer run in process instead of
	// PostRenderer's executable: a GitOps plan's helm-controller
	// post-renderers (kustomize). No flag sets it.
	PostRender postrender.PostRenderer `json:"-"`

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
	// the flag.
	Namespace string

	// SecretLookups, when set, bounds what the chart's `lookup` reads of
	// the cluster's Secrets (gitops --live renders a pull request's
	// chart); nil reads what the credentials may, as Helm does.
	SecretLookups *SecretLookups `json:"-"`
}

// DefaultTimeout is the default of --timeout, as in `helm upgrade`.
const DefaultTimeout = 300 * time.Second

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
