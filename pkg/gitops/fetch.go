package gitops

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/downloader"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/fetchbound"
)

// Fetch returns a local path of c: its directory, or the archive
// downloaded into dir with Helm's getters from the repository it names (an
// HTTP(S) chart repository, with the credentials and TLS files of the
// entry of Helm's repositories.yaml with the same URL, if any; or an OCI
// registry, with Helm's registry credentials, by tag, version constraint
// or digest: a digest the registry does not hold is an error, and the
// content pulled is checked against it). A chart that cannot be
// fetched is an error naming it and why. Each request ends within
// timeout.
func Fetch(settings *cli.EnvSettings, c Chart, dir string, timeout time.Duration) (string, error) {
	if c.Path != "" {
		return c.Path, nil
	}
	entry := repoEntry(settings, c.RepoURL)
	opts := []registry.ClientOption{
		registry.ClientOptEnableCache(true),
		registry.ClientOptWriter(io.Discard),
		registry.ClientOptCredentialsFile(settings.RegistryConfig),
		registry.ClientOptHTTPClient(&http.Client{Timeout: timeout, Transport: fetchbound.Transport{Next: http.DefaultTransport}}),
	}
	if c.PlainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	rc, err := registry.NewClient(opts...)
	if err != nil {
		return "", fmt.Errorf("chart %s: registry client: %w", c, err)
	}
	getters, err := boundedGetters(settings, entry)
	if err != nil {
		return "", fmt.Errorf("chart %s: %w", c, err)
	}
	dl := downloader.ChartDownloader{
		Out:     io.Discard, // Helm's "Pulled:" lines would mix with the report
		Getters: getters,
		Options: []getter.Option{
			getter.WithBasicAuth(entry.Username, entry.Password),
			getter.WithTLSClientConfig(entry.CertFile, entry.KeyFile, entry.CAFile),
			getter.WithInsecureSkipVerifyTLS(entry.InsecureSkipTLSverify),
			getter.WithPassCredentialsAll(entry.PassCredentialsAll),
			getter.WithPlainHTTP(c.PlainHTTP),
			getter.WithRegistryClient(rc),
			getter.WithTimeout(timeout),
		},
		RepositoryConfig: settings.RepositoryConfig,
		RepositoryCache:  settings.RepositoryCache,
		RegistryClient:   rc,
	}
	ref := c.Name
	if c.Tag != "" {
		// A tag as written, which Helm would read as a version constraint:
		// pulled by the digest it names now, as source-controller pulls it.
		desc, err := rc.Resolve(strings.TrimPrefix(c.Name, registry.OCIScheme+"://") + ":" + c.Tag)
		if err != nil {
			return "", fmt.Errorf("chart %s: %w", c, err)
		}
		ref = c.Name + "@" + desc.Digest.String()
	}
	if c.RepoURL != "" {
		ref, err = repo.FindChartInAuthAndTLSAndPassRepoURL(c.RepoURL, entry.Username, entry.Password, c.Name, c.Version,
			entry.CertFile, entry.KeyFile, entry.CAFile, entry.InsecureSkipTLSverify, entry.PassCredentialsAll, getters)
		if err != nil {
			return "", fmt.Errorf("chart %s: %w", c, err)
		}
	}
	path, _, err := dl.DownloadTo(ref, c.Version, dir)
	if err != nil {
		return "", fmt.Errorf("chart %s: %w", c, err)
	}
	return path, nil
}

// boundedGetters are Helm's getters bounded by fetchbound: a repository a
// pull request names may serve an index.yaml or an archive without end.
// Their TLS is entry's.
func boundedGetters(settings *cli.EnvSettings, entry repo.Entry) (getter.Providers, error) {
	tlsConfig, err := fetchbound.TLSConfig(entry.CertFile, entry.KeyFile, entry.CAFile, entry.InsecureSkipTLSverify)
	if err != nil {
		return nil, err
	}
	return fetchbound.Getters(settings, tlsConfig), nil
}

// repoEntry is the entry of Helm's repositories.yaml whose URL is url
// (the credentials `helm repo add` stored), an empty one when none is.
func repoEntry(settings *cli.EnvSettings, url string) repo.Entry {
	if url == "" {
		return repo.Entry{}
	}
	f, err := repo.LoadFile(settings.RepositoryConfig)
	if err != nil {
		return repo.Entry{}
	}
	for _, e := range f.Repositories {
		if strings.TrimSuffix(e.URL, "/") == strings.TrimSuffix(url, "/") {
			return *e
		}
	}
	return repo.Entry{}
}
