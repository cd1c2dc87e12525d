package planner

import (
	"fmt"
	"strconv"

	"sigs.k8s.io/yaml"
)

// RulesFileName is the rules file read from a local chart's directory when
// no other is given.
const RulesFileName = ".safe-upgrade.yaml"

// rulesFile is the form of a rules file.
type rulesFile struct {
	// Ignore are rules of --ignore's form.
	Ignore []string `json:"ignore"`
}

// ParseRulesFile parses the rules file name holds: a YAML map whose only
// field is ignore, a list of rules of --ignore's form (FIELD_PATH,
// KIND:FIELD_PATH or KIND/NAME:FIELD_PATH). Unknown fields are refused. Each
// rule is named by the file and its position in the list (name#1, ...).
func ParseRulesFile(name string, data []byte) ([]IgnoreRule, error) {
	var f rulesFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("rules file %s: %w", name, err)
	}
	out := make([]IgnoreRule, 0, len(f.Ignore))
	for i, s := range f.Ignore {
		r, err := parseIgnoreRule(s)
		if err != nil {
			return nil, fmt.Errorf("rules file %s: ignore[%d] %q: %w", name, i, s, err)
		}
		r.In = name + "#" + strconv.Itoa(i+1)
		out = append(out, r)
	}
	return out, nil
}
