// Package fetchbound bounds what is read from a chart repository or an
// OCI registry: a repository named by a pull request (gitops) can serve an
// index.yaml of 500 MiB or a manifest without end, and Helm's getters read
// a response whole. Each response body is limited by the kind of what it
// holds (Limits), and refused, naming the source and the limit, past it.
package fetchbound

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/getter"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
)

// Limits per kind of what is fetched (docs/usage.md, "Files it reads").
const (
	// IndexMax: a chart repository's index.yaml, an OCI tag list.
	IndexMax = 64 << 20
	// ArchiveMax: a chart archive (.tgz, an OCI layer), its provenance,
	// anything else a repository serves.
	ArchiveMax = 64 << 20
	// ManifestMax: an OCI manifest or index (the distribution
	// specification has registries accept 4 MiB).
	ManifestMax = 4 << 20
)

// Kind is what a request fetches and the most it may read.
type Kind struct {
	Name string
	Max  int64
}

// KindOf is the kind of what u fetches, from its path.
func KindOf(u *url.URL) Kind {
	p := u.Path
	switch {
	case strings.HasSuffix(p, "/index.yaml") || p == "index.yaml":
		return Kind{"a repository's index.yaml", IndexMax}
	case strings.Contains(p, "/manifests/"):
		return Kind{"an OCI manifest", ManifestMax}
	case strings.HasSuffix(p, "/tags/list"):
		return Kind{"an OCI tag list", IndexMax}
	case strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml") || strings.HasSuffix(p, ".json"):
		// --values URL (a chart archive is a .tgz, an OCI blob a digest).
		return Kind{"a values file", inputfile.ValuesMax}
	}
	return Kind{"a chart archive", ArchiveMax}
}

// TooLargeError is a response over its kind's limit.
type TooLargeError struct {
	URL  string
	Kind Kind
	// Size is the size the response announced, 0 when it announced none
	// (it was cut at the limit).
	Size int64
}

func (e *TooLargeError) Error() string {
	if e.Size > 0 {
		return fmt.Sprintf("GET %s: %s of %s, over the limit of %s", e.URL, e.Kind.Name, inputfile.Size(e.Size), inputfile.Size(e.Kind.Max))
	}
	return fmt.Sprintf("GET %s: %s over the limit of %s", e.URL, e.Kind.Name, inputfile.Size(e.Kind.Max))
}

// Transport bounds the body of every response Next answers by the
// kind of what was asked: one that says it is larger is refused before
// its body is read, one that does not say is cut at the limit with an
// error.
type Transport struct {
	Next http.RoundTripper
}

func (t Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.Next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	kind := KindOf(req.URL)
	if resp.ContentLength > kind.Max {
		resp.Body.Close()
		return nil, &TooLargeError{URL: req.URL.Redacted(), Kind: kind, Size: resp.ContentLength}
	}
	resp.Body = &body{ReadCloser: resp.Body, left: kind.Max, err: &TooLargeError{URL: req.URL.Redacted(), Kind: kind}}
	return resp, nil
}

// body reads at most left bytes of a response, then fails with err.
type body struct {
	io.ReadCloser
	left int64
	err  error
}

func (b *body) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.err
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if b.left -= int64(n); b.left < 0 {
		return n + int(b.left), b.err // the byte past the limit is never returned
	}
	return n, err
}

// HTTPTransport is an *http.Transport (what Helm's HTTP getter takes)
// whose every http and https request goes through Transport over a
// transport of the TLS configuration given (Helm's getter ignores its own
// TLS options when handed a transport, so they are given here).
func HTTPTransport(tlsConfig *tls.Config) *http.Transport {
	inner := &http.Transport{Proxy: http.ProxyFromEnvironment, DisableCompression: true, TLSClientConfig: tlsConfig}
	outer := &http.Transport{}
	bounded := Transport{Next: inner}
	outer.RegisterProtocol("http", bounded)
	outer.RegisterProtocol("https", bounded)
	return outer
}

// TLSConfig is the TLS configuration of a client certificate and key, a
// CA bundle (read within inputfile.SmallMax) and whether to skip the
// server's verification, as Helm's internal tlsutil.NewClientTLS builds
// it; nil when none is asked.
func TLSConfig(certFile, keyFile, caFile string, insecure bool) (*tls.Config, error) {
	if certFile == "" && keyFile == "" && caFile == "" && !insecure {
		return nil, nil
	}
	conf := &tls.Config{InsecureSkipVerify: insecure} //nolint:gosec // the user asked for it
	if certFile != "" && keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("can't load key pair from cert %s and key %s: %w", certFile, keyFile, err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	if caFile != "" {
		b, err := inputfile.Read(caFile, "a CA file", inputfile.SmallMax)
		if err != nil {
			return nil, fmt.Errorf("can't read CA file %w", err)
		}
		cp := x509.NewCertPool()
		if !cp.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("failed to append certificates from file: %s", caFile)
		}
		conf.RootCAs = cp
	}
	return conf, nil
}

// IsTooLarge reports whether err is a response over its limit.
func IsTooLarge(err error) bool {
	var tl *TooLargeError
	return errors.As(err, &tl)
}

// Getters are Helm's getters with the HTTP one reading through Transport
// over tlsConfig: Helm's getter reads a response whole, and ignores its
// own TLS options once handed a transport, so they are given here.
func Getters(settings *cli.EnvSettings, tlsConfig *tls.Config) getter.Providers {
	transport := HTTPTransport(tlsConfig)
	var out getter.Providers
	for _, p := range getter.All(settings) {
		if slices.Contains(p.Schemes, "https") {
			p.New = func(opts ...getter.Option) (getter.Getter, error) {
				return getter.NewHTTPGetter(append(opts, getter.WithTransport(transport))...)
			}
		}
		out = append(out, p)
	}
	return out
}
