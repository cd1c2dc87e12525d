package render

import (
	"crypto/tls"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/downloader"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/fetchbound"
)

// locateChart is Helm's ChartPathOptions.LocateChart (action/install.go)
// over the getters given: Helm's own builds Helm's getters, which read a
// repository's index.yaml or a chart archive whole however large it is,
// and takes no others. The path of a local chart, or of the archive
// downloaded into Helm's repository cache, with the same credentials,
// TLS, --verify and version rules as helm upgrade.
func locateChart(name string, c action.ChartPathOptions, rc *registry.Client, settings *cli.EnvSettings, getters getter.Providers) (string, error) {
	if registry.IsOCI(name) && rc == nil {
		return "", fmt.Errorf("unable to lookup chart %q, missing registry client", name)
	}
	name = strings.TrimSpace(name)
	version := strings.TrimSpace(c.Version)
	if _, err := os.Stat(name); err == nil {
		// Helm prefers a local chart to --repo (its issue 7862).
		abs, err := filepath.Abs(name)
		if err != nil {
			return abs, err
		}
		if c.Verify {
			if _, err := downloader.VerifyChart(abs, c.Keyring); err != nil {
				return "", err
			}
		}
		return abs, nil
	}
	if filepath.IsAbs(name) || strings.HasPrefix(name, ".") {
		return name, fmt.Errorf("path %q not found", name)
	}
	dl := downloader.ChartDownloader{
		Out:     os.Stderr, // Helm's is stdout; ours is the report
		Keyring: c.Keyring,
		Getters: getters,
		Options: []getter.Option{
			getter.WithPassCredentialsAll(c.PassCredentialsAll),
			getter.WithTLSClientConfig(c.CertFile, c.KeyFile, c.CaFile),
			getter.WithInsecureSkipVerifyTLS(c.InsecureSkipTLSverify),
			getter.WithPlainHTTP(c.PlainHTTP),
		},
		RepositoryConfig: settings.RepositoryConfig,
		RepositoryCache:  settings.RepositoryCache,
		RegistryClient:   rc,
	}
	if registry.IsOCI(name) {
		dl.Options = append(dl.Options, getter.WithRegistryClient(rc))
	}
	if c.Verify {
		dl.Verify = downloader.VerifyAlways
	}
	auth, err := chartAuth(&name, version, c, getters)
	if err != nil {
		return "", err
	}
	dl.Options = append(dl.Options, auth)
	if err := os.MkdirAll(settings.RepositoryCache, 0o755); err != nil {
		return "", err
	}
	filename, _, err := dl.DownloadTo(name, version, settings.RepositoryCache)
	if err != nil {
		return "", err
	}
	return filepath.Abs(filename)
}

// chartAuth is the basic auth the archive is fetched with. With --repo it
// first turns *name into the archive's URL from the repository's index,
// and passes the credentials on only where the user said to or to the
// repository's own scheme and host (port included), as Helm does.
func chartAuth(name *string, version string, c action.ChartPathOptions, getters getter.Providers) (getter.Option, error) {
	if c.RepoURL == "" {
		return getter.WithBasicAuth(c.Username, c.Password), nil
	}
	chartURL, err := repo.FindChartInAuthAndTLSAndPassRepoURL(c.RepoURL, c.Username, c.Password, *name, version,
		c.CertFile, c.KeyFile, c.CaFile, c.InsecureSkipTLSverify, c.PassCredentialsAll, getters)
	if err != nil {
		return nil, err
	}
	*name = chartURL
	u1, err := url.Parse(c.RepoURL)
	if err != nil {
		return nil, err
	}
	u2, err := url.Parse(chartURL)
	if err != nil {
		return nil, err
	}
	if c.PassCredentialsAll || (u1.Scheme == u2.Scheme && u1.Host == u2.Host) {
		return getter.WithBasicAuth(c.Username, c.Password), nil
	}
	return getter.WithBasicAuth("", ""), nil
}

// chartTLS is the TLS the chart is fetched with, as Helm's ChartDownloader
// chooses it: the chart flags' (--ca-file, --cert-file, --key-file,
// --insecure-skip-tls-verify), their files replaced by those of the
// repositories.yaml entry a repo/chart name names when it names any (helm
// repo add --ca-file …). Helm hands its getter these as options, which a
// getter given a transport ignores, so they go into fetchbound's.
func chartTLS(name string, c action.ChartPathOptions, settings *cli.EnvSettings) (*tls.Config, error) {
	certFile, keyFile, caFile := c.CertFile, c.KeyFile, c.CaFile
	if e := namedEntry(name, c, settings); e != nil && (e.CertFile != "" || e.KeyFile != "" || e.CAFile != "") {
		certFile, keyFile, caFile = e.CertFile, e.KeyFile, e.CAFile
	}
	return fetchbound.TLSConfig(certFile, keyFile, caFile, c.InsecureSkipTLSverify)
}

// namedEntry is the repositories.yaml entry of a repo/chart name; nil
// for a local chart, a URL, --repo, or a name no entry has.
func namedEntry(name string, c action.ChartPathOptions, settings *cli.EnvSettings) *repo.Entry {
	name = strings.TrimSpace(name)
	if c.RepoURL != "" || registry.IsOCI(name) || strings.Contains(name, "://") || filepath.IsAbs(name) || strings.HasPrefix(name, ".") {
		return nil
	}
	if _, err := os.Stat(name); err == nil {
		return nil
	}
	repoName, _, ok := strings.Cut(name, "/")
	if !ok {
		return nil
	}
	f, err := repo.LoadFile(settings.RepositoryConfig)
	if err != nil {
		return nil
	}
	return f.Get(repoName)
}
