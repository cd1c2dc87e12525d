package render

import (
	"crypto/tls"
	"errors"
	"net/http"
	"os"
	"sync/atomic"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/registry"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/fetchbound"
)

// newRegistryClient builds the OCI registry client as cmd/helm does, its
// responses read within fetchbound's limits (Helm's read a manifest or a
// layer whole).
func newRegistryClient(c action.ChartPathOptions, settings *cli.EnvSettings) (*registry.Client, error) {
	opts := []registry.ClientOption{
		registry.ClientOptDebug(settings.Debug),
		registry.ClientOptEnableCache(true),
		registry.ClientOptWriter(os.Stderr),
		registry.ClientOptCredentialsFile(settings.RegistryConfig),
		registry.ClientOptBasicAuth(c.Username, c.Password),
	}
	var inner http.RoundTripper
	if c.CertFile != "" && c.KeyFile != "" || c.CaFile != "" || c.InsecureSkipTLSverify {
		tlsConf, err := newTLSConfig(c)
		if err != nil {
			return nil, err
		}
		inner = &http.Transport{TLSClientConfig: tlsConf, Proxy: http.ProxyFromEnvironment}
	} else {
		if c.PlainHTTP {
			opts = append(opts, registry.ClientOptPlainHTTP())
		}
		inner = &httpFallback{next: registry.NewTransport(settings.Debug)}
	}
	opts = append(opts, registry.ClientOptHTTPClient(&http.Client{Transport: fetchbound.Transport{Next: inner}}))
	return registry.NewClient(opts...)
}

// httpFallback is Helm 3's default registry transport (registry's
// fallbackTransport, which it does not export): a registry that answers
// HTTPS with plain HTTP is asked over HTTP from then on.
type httpFallback struct {
	next      http.RoundTripper
	forceHTTP atomic.Bool
}

func (t *httpFallback) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.forceHTTP.Load() {
		req.URL.Scheme = "http"
		return t.next.RoundTrip(req)
	}
	resp, err := t.next.RoundTrip(req)
	var header tls.RecordHeaderError
	if err != nil && req.URL.Scheme == "https" && errors.As(err, &header) && string(header.RecordHeader[:]) == "HTTP/" {
		t.forceHTTP.Store(true)
		req.URL.Scheme = "http"
		return t.next.RoundTrip(req)
	}
	return resp, err
}

// newTLSConfig is helm's internal tlsutil.NewClientTLS.
func newTLSConfig(c action.ChartPathOptions) (*tls.Config, error) {
	conf, err := fetchbound.TLSConfig(c.CertFile, c.KeyFile, c.CaFile, c.InsecureSkipTLSverify)
	if conf == nil && err == nil {
		conf = &tls.Config{}
	}
	return conf, err
}
