package planner

import (
	"errors"
	"fmt"
	"strings"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// IgnoreRule is one --ignore, or one rule of a rules file: a field path,
// optionally for one kind or one object: "metadata.annotations[checksum/config]",
// "Deployment:spec.replicas", "Deployment/web:spec.replicas".
type IgnoreRule struct {
	Rule       string // as given
	Kind, Name string // "" matches any
	Path       string
	// In is where the rule was given: "--ignore", or a rules file and the
	// rule's position ("chart/.safe-upgrade.yaml#2"), or "default ...".
	In string
	// Injected rules cover only objects that ask a controller to inject
	// their CA bundle (see defaultRules).
	Injected bool
}

// ParseIgnoreRules parses --ignore values.
func ParseIgnoreRules(rules []string) ([]IgnoreRule, error) {
	out := make([]IgnoreRule, 0, len(rules))
	for _, s := range rules {
		r, err := parseIgnoreRule(s)
		if err != nil {
			return nil, fmt.Errorf("--ignore %q: %w", s, err)
		}
		r.In = "--ignore"
		out = append(out, r)
	}
	return out, nil
}

// parseIgnoreRule parses one rule: FIELD_PATH, KIND:FIELD_PATH or
// KIND/NAME:FIELD_PATH.
func parseIgnoreRule(s string) (IgnoreRule, error) {
	r := IgnoreRule{Rule: s, Path: s}
	// A selector has no '.' or '[' before its ':' (field paths do).
	if sel, path, ok := strings.Cut(s, ":"); ok && !strings.ContainsAny(sel, ".[") {
		r.Kind, r.Path = sel, path
		if kind, name, ok := strings.Cut(sel, "/"); ok {
			r.Kind, r.Name = kind, name
		}
	}
	if r.Path == "" || r.Kind == "" && r.Path != s {
		return r, errors.New("want FIELD_PATH, KIND:FIELD_PATH or KIND/NAME:FIELD_PATH")
	}
	return r, nil
}

func (r IgnoreRule) matches(id manifest.ObjectID, path string) bool {
	return path != "" && (r.Kind == "" || strings.EqualFold(r.Kind, id.Kind)) && (r.Name == "" || r.Name == id.Name) &&
		classify.UnderPattern(path, r.Path)
}

// markIgnored labels an update's reasons that a rule covers, and marks the
// update Ignored when every reason is ignored or regenerated (and at least
// one is ignored): not destructive, not counted. As for regenerated fields,
// an update the server refuses keeps its verdict.
func markIgnored(c *plan.Change, rules []IgnoreRule) {
	if len(rules) == 0 || c.Action != plan.ActionUpdate {
		return
	}
	ignored, all := false, len(c.Reasons) > 0
	for i := range c.Reasons {
		r := &c.Reasons[i]
		for _, rule := range rules {
			if rule.matches(c.ID, r.Path) && (!rule.Injected || caInjected(c)) {
				r.IgnoredBy, r.IgnoredIn, ignored = rule.Rule, rule.In, true
				break
			}
		}
		all = all && (r.Regenerated || r.IgnoredBy != "")
	}
	if ignored && all && !c.Regenerated && c.Class != plan.ClassRecreateRequired && c.Class != plan.ClassInvalid {
		c.Ignored = true
		c.Destructive, c.Blocking, c.Fingerprint = false, false, ""
	}
}
