package render

import (
	"crypto/tls"
	"fmt"
	"io"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/kube"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/fetchbound"
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

// newTLSConfig is helm's internal tlsutil.NewClientTLS.
func newTLSConfig(c action.ChartPathOptions) (*tls.Config, error) {
	conf, err := fetchbound.TLSConfig(c.CertFile, c.KeyFile, c.CaFile, c.InsecureSkipTLSverify)
	if conf == nil && err == nil {
		conf = &tls.Config{}
	}
	return conf, err
}
