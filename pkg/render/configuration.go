package render

import (
	"fmt"
	"io"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/postrender"
	"helm.sh/helm/v3/pkg/registry"
)

// renderClient is the kube client Helm's action runs with while planning.
//
// Build returns no resources: Helm's install/upgrade dry-run builds (and
// validates) the whole manifest through the API discovery, twice for an
// upgrade, which costs about 2 s of CPU per 1000 objects, and then GETs
// every object it would create to check ownership. The plan parses and
// fetches the objects itself. Everything else goes to the real client
// (IsReachable in particular), except writes, which Helm does not make in a
// dry run and which are refused if it ever did.
type renderClient struct {
	kube.Interface
}

func (*renderClient) Build(io.Reader, bool) (kube.ResourceList, error) {
	return kube.ResourceList{}, nil
}

func (*renderClient) Create(kube.ResourceList) (*kube.Result, error) {
	return nil, fmt.Errorf("%w: kube create", ErrWriteRefused)
}

func (*renderClient) Update(_, _ kube.ResourceList, _ bool) (*kube.Result, error) {
	return nil, fmt.Errorf("%w: kube update", ErrWriteRefused)
}

func (*renderClient) Delete(kube.ResourceList) (*kube.Result, []error) {
	return nil, []error{fmt.Errorf("%w: kube delete", ErrWriteRefused)}
}

// actionConfig is the configuration Helm's action runs on (its kube
// client does not build manifests and refuses writes; Log must not be nil:
// Helm calls it), with a registry client for an OCI chart, the chart's
// path options and the post-renderer.
func actionConfig(cfg *action.Configuration, settings *cli.EnvSettings, chartRef string, opts Options) (*action.Configuration, action.ChartPathOptions, postrender.PostRenderer, error) {
	run := *cfg
	run.KubeClient = &renderClient{Interface: cfg.KubeClient}
	if opts.SecretLookups != nil && cfg.RESTClientGetter != nil {
		run.RESTClientGetter = lookupGetter{RESTClientGetter: cfg.RESTClientGetter, policy: opts.SecretLookups}
	}
	if run.Log == nil {
		run.Log = func(string, ...interface{}) {}
	}

	cpo := opts.Repo
	if opts.Version != "" {
		cpo.Version = opts.Version
	}
	if cpo.Version == "" && opts.Devel {
		cpo.Version = ">0.0.0-0"
	}
	if run.RegistryClient == nil && (registry.IsOCI(chartRef) || registry.IsOCI(cpo.RepoURL)) {
		rc, err := newRegistryClient(cpo, settings)
		if err != nil {
			return nil, cpo, nil, fmt.Errorf("registry client for chart %q: %w", chartRef, err)
		}
		run.RegistryClient = rc
	}

	post := opts.PostRender
	if opts.PostRenderer != "" {
		pr, err := postrender.NewExec(opts.PostRenderer, opts.PostRendererArgs...)
		if err != nil {
			return nil, cpo, nil, fmt.Errorf("post-renderer %q: %w", opts.PostRenderer, err)
		}
		post = pr
	}
	return &run, cpo, post, nil
}
