package upgrade

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/planner"
)

// Rules are the user's ignore rules: --ignore values and a rules file
// (--rules FILE, or planner.RulesFileName in a local chart's directory).
// Both hold rules of one form (see planner.ParseIgnoreRules): the changes at
// the fields they cover are shown, labelled with the rule, but not counted.
type Rules struct {
	Ignore []string // --ignore
	File   string   // --rules
}

// AddFlags registers --ignore and --rules.
func (r *Rules) AddFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&r.Ignore, "ignore", nil, "show but do not count changes at a field path: FIELD_PATH, KIND:FIELD_PATH or KIND/NAME:FIELD_PATH, [*] for any index or key (repeatable); never for a field the server refuses to change")
	fs.StringVar(&r.File, "rules", "", "rules file (YAML: ignore: [RULE, ...], rules of --ignore's form); default: "+planner.RulesFileName+" in the chart's directory, when there is one")
}

// load returns the --ignore rules, then the rules file's: --rules, else
// the one in chartRef's directory when chartRef is a local directory that
// has one. An unreadable or invalid file is an error naming it.
func (r Rules) load(chartRef string) ([]planner.IgnoreRule, error) {
	rules, err := planner.ParseIgnoreRules(r.Ignore)
	if err != nil {
		return nil, err
	}
	path := r.File
	if path == "" {
		if info, err := os.Stat(chartRef); err != nil || !info.IsDir() {
			return rules, nil // not a local chart directory
		}
		path = filepath.Join(chartRef, planner.RulesFileName)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return rules, nil
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("rules file: %w", err)
	}
	more, err := planner.ParseRulesFile(path, data)
	if err != nil {
		return nil, err
	}
	return append(rules, more...), nil
}
