// Package verb runs the actions of every verb that changes or reads a release —
// plan, save or load a plan, apply, rollback, uninstall, status, log — in the
// shape of helm's pkg/action: a Config built once per run carries the shared
// dependencies (Helm's configuration, the one cluster connection), and each
// action lives in a file of its own:
//
//	plan.go     Plan: render the release and plan it against the cluster
//	            (or, with an offline base, plan without one: offline.go);
//	            a saved plan (--plan) enters through one savedplan.Start
//	saved.go    SavePlan: write a plan for --plan (the file and its checks
//	            are pkg/savedplan's)
//	apply.go    Apply: hand exactly the reviewed render to Helm, then watch
//	            the rollout (watch.go)
//	recover.go  Recover: settle what an interrupted apply left
//	uninstall.go PlanUninstall, Uninstall: plan helm uninstall (what it
//	            deletes, what stays), run Helm's, read back what is left
//
// The actions take plain requests (PlanRequest, SaveRequest) built by the
// command layer (pkg/cli), which owns every flag; they read them and never
// change them. The command layer never builds a client or reads the
// release storage itself.
package verb

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"

	"helm.sh/helm/v3/pkg/action"
	helmcli "helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/savedplan"
)

// Config is what every action of one run shares. Build it with NewConfig;
// Connect adds the cluster, once.
type Config struct {
	// Settings is Helm's environment (kubeconfig, context, namespace,
	// repositories, HELM_DRIVER through the environment).
	Settings *helmcli.EnvSettings
	// Namespace is the release namespace; StorageNamespace, when set, the
	// namespace of its Helm records (helm-controller's storageNamespace),
	// else Namespace.
	Namespace        string
	StorageNamespace string
	// Out receives progress and warnings (stderr); never the report.
	Out io.Writer
	// Logf receives debug lines (--debug); never nil.
	Logf func(format string, args ...interface{})
	// Now is the clock (saved plans' age).
	Now func() time.Time
	// Masker masks Secret values in plans; Sanitizer removes the release's
	// Secret values from everything the API server and Helm say (errors,
	// warnings, logs, release descriptions). The planner feeds it.
	Masker    *redact.Masker
	Sanitizer *redact.Sanitizer
	// Progress, when set, receives a line as each stage of a plan or an
	// apply starts (the CLI sets it when stderr is a terminal).
	Progress func(format string, args ...interface{})
	// Command is the command line without flag values (which may hold
	// Secret values), recorded in the release's Lease for other users.
	Command string
	// Program is how the user runs the tool ("helm safe-upgrade", the
	// default, or "kubectl safe-upgrade"): the commands a message
	// suggests start so.
	Program string
	// RequestTimeout bounds each request to the API server, Helm's
	// included (rest.Config.Timeout): --timeout, so a server that stops
	// answering ends a request that passes no context of its own (Helm's
	// release storage, discovery) as it ends those that do. Set it before
	// Connect; 0 leaves requests unbounded but by their contexts.
	RequestTimeout time.Duration
	// Terminal is true when Out is a terminal that can move its cursor
	// (not TERM=dumb, no NO_COLOR): the rollout watch then redraws one line
	// per object in place, cut to TerminalSize's width, instead of a line
	// per change.
	Terminal bool
	// TerminalSize reports Out's terminal's size now; nil: 80 columns.
	TerminalSize func() (cols, rows int)
	// Caller, when set, names who ran the upgrade (the helm shim's parent
	// process, e.g. helmfile): the release description says so.
	Caller string
	// Announce, when set, says what became of the release after a
	// successful apply instead of Apply's own line and NOTES (the helm shim
	// prints Helm's lines on stdout, which scripts parse).
	Announce func(rel *release.Release, installed bool) error

	// Set by Connect.
	//
	// Helm is Helm's action configuration for Namespace: release storage,
	// kube client.
	Helm *action.Configuration
	// Cluster reads and dry-runs objects; ServerVersion is the API server's
	// version (e.g. v1.37.2).
	Cluster       *live.Cluster
	ServerVersion string
	// Identity names the cluster (saved plans are pinned to it); see
	// identity. server is the API server's URL.
	Identity savedplan.ClusterIdentity
	server   string
	// requests counts every request sent to the API server, Helm's
	// included (--debug prints them per stage).
	requests *atomic.Int64
	// deadline bounds every request of the current step (stepDeadline;
	// Unix nanoseconds, 0: none).
	deadline *atomic.Int64
}

// NewConfig returns the configuration of one run. userAgent marks every
// request (audit logs show it); with settings.Debug (--debug, HELM_DEBUG)
// debug lines go to out. Secret values are masked with masker, or with a
// fresh random key that lives only in the process when masker is nil. The
// API server's warnings and the debug lines pass through the run's
// Sanitizer.
func NewConfig(settings *helmcli.EnvSettings, out io.Writer, userAgent string, masker *redact.Masker) *Config {
	if masker == nil {
		masker = redact.NewMasker()
	}
	san := redact.NewSanitizer(masker)
	// The rollout watch shows progress while Helm applies and logs: one
	// write at a time.
	out = iostreams.Locked(out)
	logf := func(string, ...interface{}) {}
	if settings.Debug {
		logf = san.Logf(func(format string, args ...interface{}) {
			fmt.Fprintf(out, "debug: "+format+"\n", args...)
		})
	}
	routeKlog(settings.Debug, logf)
	requests := new(atomic.Int64)
	cfg := &Config{Settings: settings, Namespace: settings.Namespace(), Out: out, Logf: logf, Now: time.Now,
		Masker: masker, Sanitizer: san, requests: requests, deadline: new(atomic.Int64)}
	if flags, ok := settings.RESTClientGetter().(*genericclioptions.ConfigFlags); ok {
		warnings := redact.Warnings(out, san, predict.Collect)
		// Helm's own wrapper sets --qps and --burst-limit (HELM_QPS,
		// HELM_BURST_LIMIT): keep it, or they are silently dropped.
		helmWrap := flags.WrapConfigFn
		flags.WrapConfigFn = func(c *rest.Config) *rest.Config {
			if helmWrap != nil {
				c = helmWrap(c)
			}
			if userAgent != "" {
				c.UserAgent = userAgent
			}
			c.WarningHandlerWithContext = warnings
			if cfg.RequestTimeout > 0 {
				c.Timeout = cfg.RequestTimeout
			}
			c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return redact.SecretReads{Next: rt, Sanitizer: san} })
			c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return counting{rt, requests} })
			c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return stepDeadline{next: rt, at: cfg.deadline} })
			return c
		}
	}
	return cfg
}

// routeKlog sends what client-go logs through klog (an API server that
// stops answering makes it log errors of its own, retries, watches cut)
// to the debug lines with --debug, and nowhere without: the run's error
// already says what failed, in one line. klog's logger is the process's;
// the tool runs once per process.
func routeKlog(debug bool, logf func(string, ...interface{})) {
	if !debug {
		klog.SetLogger(logr.Discard())
		return
	}
	klog.SetLoggerWithOptions(logr.Discard(), klog.WriteKlogBuffer(func(line []byte) {
		logf("klog: %s", strings.TrimRight(string(line), "\n"))
	}))
}

// counting counts the requests that pass through it.
type counting struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c counting) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(req)
}

// Requests is the number of requests sent to the API server so far (0 when
// the client configuration is not Helm's, whose requests are not counted).
func (c *Config) Requests() int64 {
	if c.requests == nil {
		return 0
	}
	return c.requests.Load()
}

// Stage runs one stage of a run and, with --debug, says how long it took
// and how many requests it sent.
func (c *Config) Stage(name string, run func() error) error {
	start, before := time.Now(), c.Requests()
	err := run()
	c.logStage(name, time.Since(start), c.Requests()-before, "")
	return err
}

func (c *Config) logStage(name string, took time.Duration, requests int64, detail string) {
	if detail != "" {
		detail = "; " + detail
	}
	c.Logf("stage %s: %s, %d request(s)%s", name, took.Round(time.Millisecond), requests, detail)
}

// progress says which stage starts, when Progress is set.
func (c *Config) progress(format string, args ...interface{}) {
	if c.Progress != nil {
		// The arguments may quote a repository or a chart (a GitOps file
		// path, a chart's name): escaped, as every text from elsewhere.
		c.Progress("%s", c.Sanitizer.Text(fmt.Sprintf(format, args...), redact.MessageLimit))
	}
}

// Connect builds the cluster connection — the only place in the tool that
// does: Helm's configuration (release storage, kube client) and the
// discovery, dynamic and REST-mapper clients of the planner and the apply.
// Requests are bounded by ctx's deadline.
func (c *Config) Connect(ctx context.Context) error {
	if c.Helm != nil {
		return nil
	}
	getter := c.Settings.RESTClientGetter()
	restConfig, err := c.restConfig(ctx)
	if err != nil {
		return err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("cluster client: %w", err)
	}
	version, err := disco.ServerVersion()
	if err != nil {
		return fmt.Errorf("cluster unreachable at %s: %w", restConfig.Host, err)
	}
	groups, err := restmapper.GetAPIGroupResources(disco)
	if err != nil {
		return fmt.Errorf("discovering API resources: %w", err)
	}
	// The dynamic client over a REST client of its own configuration, which
	// the planner's LISTs also read raw pages through (live.Cluster.REST).
	dynConfig := dynamic.ConfigFor(restConfig)
	dynConfig.GroupVersion, dynConfig.APIPath = nil, "/if-you-see-this-search-for-the-break" // as dynamic.NewForConfig: every request sets its path
	rc, err := rest.UnversionedRESTClientFor(dynConfig)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	dyn := dynamic.New(rc)
	helmCfg, err := releasestate.NewConfiguration(getter, c.storageNamespace(), os.Getenv("HELM_DRIVER"), c.Logf)
	if err != nil {
		return err
	}
	if kc, ok := helmCfg.KubeClient.(*kube.Client); ok {
		// Records in the storage namespace, objects in the release's: as
		// helm-controller configures Helm (its storage driver built on the
		// storage namespace, its client on the release namespace).
		kc.Namespace = c.Namespace
	}
	cluster := &live.Cluster{Dynamic: dyn, REST: rc, Mapper: live.Memoized(restmapper.NewDiscoveryRESTMapper(groups))}
	c.Helm, c.Cluster, c.ServerVersion, c.server = helmCfg, cluster, version.GitVersion, restConfig.Host
	return nil
}

// storageNamespace is where the release's Helm records are.
func (c *Config) storageNamespace() string {
	if c.StorageNamespace != "" {
		return c.StorageNamespace
	}
	return c.Namespace
}

// identity names the cluster; read once, and only for saved plans (it costs
// a GET of kube-system that plain plans do not need).
func (c *Config) identity(ctx context.Context) (savedplan.ClusterIdentity, error) {
	if c.Identity.Server != "" {
		return c.Identity, nil
	}
	if err := c.Connect(ctx); err != nil {
		return savedplan.ClusterIdentity{}, err
	}
	id, err := identify(ctx, c.Settings.RESTClientGetter(), c.Settings.KubeContext, c.server, c.Cluster)
	if err != nil {
		return savedplan.ClusterIdentity{}, err
	}
	c.Identity = id
	return id, nil
}

// identify names the cluster: server URL, kube-system UID (empty when RBAC
// hides it: the server URL and context still pin the plan), context.
func identify(ctx context.Context, getter genericclioptions.RESTClientGetter, kubeContext, server string, cluster *live.Cluster) (savedplan.ClusterIdentity, error) {
	id := savedplan.ClusterIdentity{Server: server, Context: kubeContext}
	if id.Context == "" {
		if raw, err := getter.ToRawKubeConfigLoader().RawConfig(); err == nil {
			id.Context = raw.CurrentContext
		}
	}
	ns, err := cluster.Namespace(ctx, "kube-system")
	switch {
	case err == nil:
		id.KubeSystemUID = string(ns.GetUID())
	case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
	default:
		return id, fmt.Errorf("reading namespace kube-system (the cluster's identity): %w", err)
	}
	return id, nil
}

// restConfig is the client configuration of the planner and the apply:
// --qps and --burst-limit (HELM_QPS, HELM_BURST_LIMIT) when given, else no
// client-side rate limit; requests bounded by ctx's deadline.
func (c *Config) restConfig(ctx context.Context) (*rest.Config, error) {
	restConfig, err := c.Settings.RESTClientGetter().ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	// Helm's wrapper already set QPS and Burst from the settings; say it
	// again for getters that are not Helm's ConfigFlags.
	restConfig.QPS, restConfig.Burst = c.Settings.QPS, c.Settings.BurstLimit
	if c.Settings.QPS == 0 {
		// In-flight requests are bounded by the planner's concurrency; the
		// client-side default (5/s) would make a 1000-object plan take
		// minutes. API Priority and Fairness still protects the server.
		restConfig.QPS = -1
	}
	// Each request ends by --timeout (also set by the getter's wrapper
	// above; said again for getters that are not Helm's ConfigFlags), and
	// by ctx's deadline when it comes first.
	restConfig.Timeout = c.RequestTimeout
	if deadline, ok := ctx.Deadline(); ok && (restConfig.Timeout == 0 || time.Until(deadline) < restConfig.Timeout) {
		restConfig.Timeout = time.Until(deadline)
	}
	if restConfig.Timeout <= 0 {
		restConfig.Timeout = 30 * time.Second
	}
	return restConfig, nil
}

// program is Program, "helm safe-upgrade" when unset.
func (c *Config) program() string {
	if c.Program == "" {
		return "helm safe-upgrade"
	}
	return c.Program
}
