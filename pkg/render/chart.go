package render

import (
	"fmt"
	"net/url"
	"os"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/downloader"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/strvals"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/fetchbound"
	"github.com/safe-upgrade/helm-safe-upgrade/internal/helmsdk"
	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
)

// loadChart locates and loads the chart and merges the values, as
// cmd/helm/upgrade.go reads them: the Result to fill, and the values.
func loadChart(run *action.Configuration, settings *cli.EnvSettings, chartRef string, cpo action.ChartPathOptions, opts Options) (*Result, map[string]interface{}, error) {
	// What the chart's repository and a values URL serve is read within
	// fetchbound's limits, with the TLS Helm's getters would use.
	tlsConfig, err := chartTLS(chartRef, cpo, settings)
	if err != nil {
		return nil, nil, fmt.Errorf("locating chart %q: %w", chartRef, err)
	}
	chartPath, err := locateChart(chartRef, cpo, run.RegistryClient, settings, fetchbound.Getters(settings, tlsConfig))
	if err != nil {
		return nil, nil, fmt.Errorf("locating chart %q: %w", chartRef, err)
	}
	if err := checkValueFiles(opts.Values); err != nil {
		return nil, nil, err
	}
	vals, err := opts.Values.MergeValues(fetchbound.Getters(settings, nil))
	if err != nil {
		return nil, nil, fmt.Errorf("reading values: %w", err)
	}
	ch, err := loader.Load(chartPath)
	if err != nil {
		return nil, nil, fmt.Errorf("loading chart %s: %w", chartPath, err)
	}
	if ch, err = checkDependencies(ch, chartPath, settings, opts); err != nil {
		return nil, nil, err
	}
	res := &Result{Chart: ch, ChartPath: chartPath, Values: helmsdk.CopyValues(vals)}
	if ch.Metadata.Deprecated {
		res.Warnings = append(res.Warnings, fmt.Sprintf("chart %s is deprecated", ch.Name()))
	}
	return res, vals, nil
}

// checkDependencies checks that the chart's charts/ directory satisfies
// Chart.yaml and, with --dependency-update, updates it and loads the chart
// again, as cmd/helm/upgrade.go does.
func checkDependencies(ch *chart.Chart, chartPath string, settings *cli.EnvSettings, opts Options) (*chart.Chart, error) {
	req := ch.Metadata.Dependencies
	if req == nil {
		return ch, nil
	}
	err := action.CheckDependencies(ch, req)
	if err == nil {
		return ch, nil
	}
	if !opts.DependencyUpdate {
		return nil, fmt.Errorf("chart %s: checking dependencies (you may need to run `helm dependency build`, or pass --dependency-update): %w", chartPath, err)
	}
	man := &downloader.Manager{
		Out:              os.Stderr, // helm prints the progress; our stdout is the report
		ChartPath:        chartPath,
		Keyring:          opts.Repo.Keyring,
		Getters:          getter.All(settings),
		RepositoryConfig: settings.RepositoryConfig,
		RepositoryCache:  settings.RepositoryCache,
		Debug:            settings.Debug,
	}
	if err := man.Update(); err != nil {
		return nil, fmt.Errorf("chart %s: --dependency-update: %w", chartPath, err)
	}
	if ch, err = loader.Load(chartPath); err != nil {
		return nil, fmt.Errorf("chart %s: reloading after the dependency update: %w", chartPath, err)
	}
	return ch, nil
}

// checkValueFiles refuses a local values file (--values, --set-file) that
// is not a regular file of at most inputfile.ValuesMax bytes, before Helm
// reads it: Helm reads whatever the path is, whole, so a named pipe in the
// working directory would block the run and a link to /dev/zero exhaust
// its memory. Standard input ("-") and URLs (a scheme Helm's getters
// fetch) are Helm's to read.
func checkValueFiles(v values.Options) error {
	for _, f := range v.ValueFiles {
		if err := checkValueFile(f); err != nil {
			return fmt.Errorf("--values %w", err)
		}
	}
	for _, kv := range v.FileValues {
		// Helm's own parsing of key=path pairs, with a reader that checks.
		err := strvals.ParseIntoFile(kv, map[string]interface{}{}, func(rs []rune) (interface{}, error) {
			return nil, checkValueFile(string(rs))
		})
		if err != nil {
			return fmt.Errorf("--set-file %w", err)
		}
	}
	return nil
}

// checkValueFile checks one path as checkValueFiles says.
func checkValueFile(path string) error {
	if strings.TrimSpace(path) == "-" {
		return nil
	}
	if u, err := url.Parse(path); err == nil && len(u.Scheme) > 1 { // not a Windows drive letter
		return nil
	}
	return inputfile.Check(path, "a values file", inputfile.ValuesMax)
}
