package planner

// The ignore rules, all of them here: the user's (--ignore, a rules file),
// the defaults every plan has, and how they mark a plan's changes.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
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

// UserRules are the user's ignore rules as given: --ignore values and a
// rules file (--rules FILE, or RulesFileName in a local chart's directory).
// Both hold rules of one form (see ParseIgnoreRules): the changes at the
// fields they cover are shown, labelled with the rule, but not counted.
type UserRules struct {
	Ignore []string // --ignore
	File   string   // --rules
}

// ForChart returns the rules for chartRef: the --ignore rules, then the
// rules file's (--rules, else the one in chartRef's directory when chartRef
// is a local directory that has one). An unreadable or invalid file is an
// error naming it. (Not Load: that name reads a checkout in gitops and
// decodes an object in manifest.)
func (r UserRules) ForChart(chartRef string) ([]IgnoreRule, error) {
	rules, err := ParseIgnoreRules(r.Ignore)
	if err != nil {
		return nil, err
	}
	path := r.File
	if path == "" {
		if info, err := os.Stat(chartRef); err != nil || !info.IsDir() {
			return rules, nil // not a local chart directory
		}
		path = filepath.Join(chartRef, RulesFileName)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return rules, nil
		}
	}
	data, err := inputfile.Read(path, "a rules file", inputfile.SmallMax)
	if err != nil {
		return nil, fmt.Errorf("rules file %w", err)
	}
	more, err := ParseRulesFile(path, data)
	if err != nil {
		return nil, err
	}
	return append(rules, more...), nil
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

// caInjectors are the annotations that ask a controller to write a CA
// bundle into the object (cert-manager's cainjector, OpenShift's service CA
// operator): whatever the chart sets there, the controller writes its own
// again right after the upgrade.
var caInjectors = []string{
	"cert-manager.io/inject-ca-from",
	"cert-manager.io/inject-ca-from-secret",
	"cert-manager.io/inject-apiserver-ca",
	"service.beta.openshift.io/inject-cabundle",
}

// defaultRules are the ignore rules every plan has: the CA bundles a
// controller injects (see caInjectors), ignored only on objects that ask
// for the injection.
func defaultRules() []IgnoreRule {
	in := "default (CA bundle injected by a controller)"
	var out []IgnoreRule
	for _, r := range []struct{ kind, path string }{
		{"MutatingWebhookConfiguration", "webhooks[*].clientConfig.caBundle"},
		{"ValidatingWebhookConfiguration", "webhooks[*].clientConfig.caBundle"},
		{"APIService", "spec.caBundle"},
		{"CustomResourceDefinition", "spec.conversion.webhook.clientConfig.caBundle"},
	} {
		out = append(out, IgnoreRule{Rule: r.kind + ":" + r.path, Kind: r.kind, Path: r.path, In: in, Injected: true})
	}
	return out
}

// caInjected reports whether the object of c asks for a CA bundle to be
// injected, live or in the new render.
func caInjected(c *plan.Change) bool {
	for _, obj := range []interface{ GetAnnotations() map[string]string }{c.Before, c.After} {
		if obj == nil {
			continue
		}
		for _, a := range caInjectors {
			if _, ok := obj.GetAnnotations()[a]; ok {
				return true
			}
		}
	}
	return false
}
