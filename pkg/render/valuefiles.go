package render

import (
	"fmt"
	"net/url"
	"strings"

	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/strvals"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
)

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
