// Package render renders the next revision of a release exactly as
// `helm upgrade` (or `helm upgrade --install`) would, without writing
// anything to the cluster and without the cost of Helm's kube-client Build.
package render

import (
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

// TimeLimit is --timeout, or helm upgrade's default when unset: the one
// place that default is applied (render, plan and apply all use it).
func (o *Options) TimeLimit() time.Duration {
	if o.Timeout <= 0 {
		return DefaultTimeout
	}
	return o.Timeout
}
