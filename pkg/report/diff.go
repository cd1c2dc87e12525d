package report

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pmezard/go-difflib/difflib"
	yaml "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/panics"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/jsonvalue"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// diffPath names an object in diff headers: Kind/namespace/name, or
// Kind/name for cluster-scoped objects.
func diffPath(c *plan.Change) string {
	return c.ID.Kind + "/" + objectName(c)
}

// sides names the two sides of every diff: live → predicted, or, offline,
// the base render → the head render.
type sides struct{ from, to string }

func diffSides(p *plan.Plan) sides {
	if p.Offline {
		return sides{"base", "head"}
	}
	return sides{"live", "predicted"}
}

// diffAll returns unifiedDiff of every change, in order. The work is spread
// over GOMAXPROCS goroutines: encoding YAML is most of a report's cost.
func diffAll(changes []*plan.Change, context int, s sides) ([]string, error) {
	diffs := make([]string, len(changes))
	errs := make([]error, len(changes))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(changes)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(changes); i = int(next.Add(1)) - 1 {
				diffs[i], errs[i] = recoveredDiff(changes[i], context, s)
			}
		})
	}
	wg.Wait()
	return diffs, errors.Join(errs...)
}

// recoveredDiff is unifiedDiff in a goroutine of diffAll: a panic becomes
// its error, as Go would otherwise exit 2 (the gate's "blocked").
func recoveredDiff(c *plan.Change, context int, s sides) (d string, err error) {
	defer panics.Catch(&err)
	return unifiedDiff(c, context, s)
}

// unifiedDiff returns the unified diff of the YAML of c's live object
// (Before) and predicted object (After), with context lines of context; ""
// when there is nothing to show: a noop, an update without a prediction (the
// server rejected it), or identical objects.
func unifiedDiff(c *plan.Change, context int, s sides) (string, error) {
	before, after := c.Before, c.After
	switch c.Action {
	case plan.ActionNoop:
		return "", nil
	case plan.ActionCreate:
		before = nil
	case plan.ActionDelete:
		after = nil
	default:
		if before == nil || after == nil {
			return "", nil
		}
	}
	a, b, err := yamlPair(c, before, after)
	if err != nil {
		return "", err
	}
	path := diffPath(c)
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        a,
		B:        b,
		FromFile: s.from + "/" + path,
		ToFile:   s.to + "/" + path,
		Context:  context,
	})
	if err != nil {
		return "", fmt.Errorf("diff of %s: %w", c.ID, err)
	}
	return escapeLines(d), nil
}

// escapeLines escapes, in each line of a diff, what could act on a
// terminal (redact's Text, never cutting a line: the diff is what is
// reviewed). The YAML encoder quotes control characters already, but
// leaves the bidirectional controls and NEL a live object can hold.
func escapeLines(d string) string {
	var escapeOnly *redact.Sanitizer
	return escapeOnly.Lines(d)
}

// yamlLines renders obj as YAML split into lines that keep their "\n"; nil
// for a nil object. It marshals the unstructured content directly with
// yaml.v2 (keys sorted), which prints what sigs.k8s.io/yaml would without its
// JSON round trip: that round trip took three quarters of the report's time.
func yamlLines(c *plan.Change, obj *unstructured.Unstructured) ([]string, error) {
	if obj == nil || obj.Object == nil {
		return nil, nil
	}
	return marshalLines(c, guard(c, obj.Object))
}

// marshalLines is yamlLines of content already guarded: fastYAML's bytes,
// which are yaml.v2's, or yaml.v2's where fastYAML does not know them.
func marshalLines(c *plan.Change, content map[string]interface{}) ([]string, error) {
	out, ok := fastYAML(content)
	if !ok {
		var err error
		if out, err = yaml.Marshal(content); err != nil {
			return nil, fmt.Errorf("YAML of %s: %w", c.ID, err)
		}
	}
	lines := strings.SplitAfter(string(out), "\n")
	if last := len(lines) - 1; lines[last] == "" {
		lines = lines[:last]
	}
	return lines, nil
}

// yamlPair returns yamlLines of before and after. Top-level fields equal on
// both sides (often metadata, or the whole spec when only a label changed)
// are encoded once: YAML encoding is most of a report's time. The lines are
// those of encoding each object whole: yaml.v2 writes a mapping's fields one
// after the other in key order, which for keys of letters alone is
// sort.Strings' (other keys fall back to whole objects). Consecutive fields
// that are all equal, or all different, are encoded in one call: each call
// costs about as much as a small object's metadata.
func yamlPair(c *plan.Change, before, after *unstructured.Unstructured) ([]string, []string, error) {
	if before == nil || before.Object == nil || after == nil || after.Object == nil {
		a, err := yamlLines(c, before)
		if err != nil {
			return nil, nil, err
		}
		b, err := yamlLines(c, after)
		return a, b, err
	}
	bm, am := guard(c, before.Object), guard(c, after.Object)
	keys, ok := letterKeys(bm, am)
	if !ok || len(bm) == 0 || len(am) == 0 { // an empty mapping is "{}"
		a, err := marshalLines(c, bm)
		if err != nil {
			return nil, nil, err
		}
		b, err := marshalLines(c, am)
		return a, b, err
	}
	var a, b []string
	for i := 0; i < len(keys); {
		same := equalField(bm, am, keys[i])
		j := i + 1
		for j < len(keys) && equalField(bm, am, keys[j]) == same {
			j++
		}
		run := keys[i:j]
		if same {
			lines, err := marshalLines(c, pick(bm, run))
			if err != nil {
				return nil, nil, err
			}
			a, b = append(a, lines...), append(b, lines...)
		} else {
			for _, side := range []struct {
				content map[string]interface{}
				lines   *[]string
			}{{bm, &a}, {am, &b}} {
				if part := pick(side.content, run); len(part) > 0 {
					lines, err := marshalLines(c, part)
					if err != nil {
						return nil, nil, err
					}
					*side.lines = append(*side.lines, lines...)
				}
			}
		}
		i = j
	}
	return a, b, nil
}

// equalField reports whether key is on both sides with equal values.
func equalField(before, after map[string]interface{}, key string) bool {
	bv, inBefore := before[key]
	av, inAfter := after[key]
	return inBefore && inAfter && jsonvalue.Equal(bv, av)
}

// pick returns the fields of m named by keys that m has.
func pick(m map[string]interface{}, keys []string) map[string]interface{} {
	out := make(map[string]interface{}, len(keys))
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// letterKeys returns the keys of both maps, sorted, if each is made of ASCII
// letters only.
func letterKeys(maps ...map[string]interface{}) ([]string, bool) {
	seen := map[string]bool{}
	var keys []string
	for _, m := range maps {
		for k := range m {
			if seen[k] {
				continue
			}
			if k == "" || strings.IndexFunc(k, func(r rune) bool { return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') }) >= 0 {
				return nil, false
			}
			seen[k] = true
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys, true
}

// masked reports whether v is already a redact marker.
func masked(v interface{}) bool {
	s, ok := v.(string)
	return ok && redact.IsMasked(s)
}

// guard is a second line of defence behind the redaction stage: it returns
// content, or a copy of it in which every value that stage should have
// masked but did not is masked (see maskValue) — the
// last-applied-configuration annotation of any object, and the data and
// stringData values of every object redact.Sensitive names (any Secret,
// whatever the case of its kind or its group, and any object whose data
// cannot be told apart from a Secret's). Values already masked are kept as
// they are, and content itself is never modified.
func guard(c *plan.Change, content map[string]interface{}) map[string]interface{} {
	secret := redact.Sensitive(&unstructured.Unstructured{Object: content}) || strings.EqualFold(c.ID.Kind, "Secret")
	meta, _ := content["metadata"].(map[string]interface{})
	annotations, _ := meta["annotations"].(map[string]interface{})
	lastApplied, hasLastApplied := annotations[redact.LastAppliedAnnotation]
	leakyAnnotation := hasLastApplied && !masked(lastApplied)
	if !secret && !leakyAnnotation {
		return content
	}
	out := shallowCopy(content)
	if leakyAnnotation {
		newMeta, newAnnotations := shallowCopy(meta), shallowCopy(annotations)
		newAnnotations[redact.LastAppliedAnnotation] = maskValue(lastApplied)
		newMeta["annotations"] = newAnnotations
		out["metadata"] = newMeta
	}
	if !secret {
		return out
	}
	for _, field := range []string{"data", "stringData"} {
		v, ok := content[field]
		if !ok || v == nil {
			continue
		}
		values, ok := v.(map[string]interface{})
		if !ok {
			out[field] = maskValue(v) // malformed: masked whole
			continue
		}
		newValues := make(map[string]interface{}, len(values))
		for k, v := range values {
			newValues[k] = maskValue(v)
		}
		out[field] = newValues
	}
	return out
}

func shallowCopy(m map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// maskValue masks v unless it is masked already. The guard has no key (the
// plan's markers are made by the planner): a value it has to mask is shown
// as the unkeyed "(sensitive)", hidden but not comparable.
func maskValue(v interface{}) interface{} {
	if masked(v) {
		return v
	}
	var unkeyed *redact.Masker
	return unkeyed.Value(nil)
}
