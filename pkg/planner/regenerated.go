package planner

import (
	"fmt"
	"strings"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// RegeneratedMessage labels a field whose value differs on every render.
const RegeneratedMessage = "regenerated on every render"

// RotatedMessage opens the note on a Secret value regenerated on every
// render.
const RotatedMessage = "Secret value rotated"

// regenerated returns, per object of the new render, the field paths whose
// values differ in a second render of the same chart and values (both as
// rendered, before Helm's metadata is added to either). Both renders are
// compared in the form the verdicts compare objects in (classify.Comparable:
// a Secret's stringData folded into data, defaults filled in), so the paths
// are those the reasons name, whatever the chart wrote: a value generated
// in stringData is marked at data.KEY, where the server stores it.
func regenerated(next *manifest.Set, second string, rel plan.Release, scoper manifest.Scoper, parsed *manifest.Parsed) (map[manifest.ObjectID][]string, error) {
	if second == "" {
		return nil, nil
	}
	again, err := manifest.SplitSharing("second render of chart "+rel.Chart, second, rel.Namespace, scoper, parsed)
	if err != nil {
		return nil, err
	}
	out := map[manifest.ObjectID][]string{}
	for _, o := range next.Objects() {
		a := again.Get(o.ID)
		if a == nil || manifest.SameDocument(o, a) {
			continue
		}
		// Decoded for the comparison alone: the new render's objects stay
		// encoded until their evaluation.
		first, err := o.Decoded()
		if err != nil {
			return nil, err
		}
		second, err := a.Decoded()
		if err != nil {
			return nil, err
		}
		if paths := classify.ChangedPaths(classify.Comparable(first).Object, classify.Comparable(second).Object); len(paths) > 0 {
			out[o.ID] = paths
		}
	}
	return out, nil
}

// markRegenerated labels the reasons of c at regenerated paths (or below
// them), and marks an update whose every reason is one as Regenerated: not
// destructive, not counted as a change. An update the server refuses keeps
// its verdict (the upgrade would fail), as does one whose reasons were cut
// short (the fields not listed are not known to be regenerated).
func markRegenerated(c *plan.Change, paths []string) {
	if len(paths) == 0 {
		return
	}
	all := len(c.Reasons) > 0
	for i := range c.Reasons {
		r := &c.Reasons[i]
		for _, p := range paths {
			if r.Path != "" && classify.Under(r.Path, p) {
				r.Regenerated = true
				break
			}
		}
		all = all && r.Regenerated
	}
	switch c.Action {
	case plan.ActionCreate:
		c.Notes = append(c.Notes, fmt.Sprintf("%s: %s", RegeneratedMessage, strings.Join(paths, ", ")))
	case plan.ActionUpdate:
		if all && c.Class != plan.ClassRecreateRequired && c.Class != plan.ClassInvalid {
			c.Regenerated = true
			c.Destructive, c.Blocking, c.Fingerprint = false, false, ""
		}
		if note := rotationNote(c); note != "" {
			c.Notes = append(c.Notes, note)
		}
	}
}

// rotationNote says what a regenerated Secret value means: unlike a
// timestamp, it is really replaced by the upgrade (Helm writes the new
// random value), and whatever read the old one loses it. It names the keys,
// never the values.
func rotationNote(c *plan.Change) string {
	if c.ID.Group != "" || c.ID.Kind != "Secret" {
		return ""
	}
	var keys []string
	for _, r := range c.Reasons {
		if r.Regenerated && classify.Under(r.Path, "data") {
			keys = append(keys, r.Path)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: %s: the chart generates a new value on every render, so this upgrade rotates it (Helm writes the new value; whatever used the old one must follow); "+
		"to keep it, read the existing value with lookup in the template or set it in values", RotatedMessage, strings.Join(keys, ", "))
}
