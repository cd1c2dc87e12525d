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

// regenerated returns, per object of the new render, the field paths whose
// values differ in a second render of the same chart and values (both as
// rendered, before Helm's metadata is added to either).
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
		if paths := classify.ChangedPaths(first.Object, second.Object); len(paths) > 0 {
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
	}
}
