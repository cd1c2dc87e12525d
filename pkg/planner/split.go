package planner

import (
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
)

// split is the plan's first pass: the last release's manifest and the new
// render split into objects (and the second render's regenerated fields),
// sharing the parsed documents they repeat word for word.
func (p *Planner) split(in Input) (prev, next *manifest.Set, regen map[manifest.ObjectID][]string, err error) {
	ns := in.Release.Namespace
	prevName := ReleaseManifestName(in.Release.Name, in.Release.CurrentRevision)
	if in.PreviousName != "" {
		prevName = in.PreviousName
	}
	nextName := "new render of chart " + in.Release.Chart
	prev, parsed, err, early := in.PreviousSplit.Take(prevName, in.PreviousManifest, ns)
	in.PreviousSplit = nil
	if early {
		// The last release was split during the render: the new render
		// and the second one share the documents it repeats word for
		// word.
		if err != nil {
			// The new render's errors come first, as without the early
			// split: a broken chart is what to fix before a stored
			// release.
			if next, parsed, nerr := manifest.SplitRemembering(nextName, in.NextManifest, ns, p.Cluster); nerr != nil {
				return nil, nil, nil, nerr
			} else if _, nerr := regenerated(next, in.SecondRender, in.Release, p.Cluster, parsed); nerr != nil {
				return nil, nil, nil, nerr
			}
			return nil, nil, nil, err
		}
		if next, err = manifest.SplitAdding(nextName, in.NextManifest, ns, p.Cluster, parsed); err != nil {
			return nil, nil, nil, err
		}
		if regen, err = regenerated(next, in.SecondRender, in.Release, p.Cluster, parsed); err != nil {
			return nil, nil, nil, err
		}
	} else {
		// The last release and the second render share the parsed content
		// of the new render's documents they repeat word for word.
		parsed = in.NextParsed
		if parsed != nil {
			next, err = manifest.SplitSharing(nextName, in.NextManifest, ns, p.Cluster, parsed)
		} else {
			next, parsed, err = manifest.SplitRemembering(nextName, in.NextManifest, ns, p.Cluster)
		}
		if err != nil {
			return nil, nil, nil, err
		}
		// Before the last release is parsed: the second render's objects
		// are garbage by then, and three parsed releases are never held
		// at once.
		if regen, err = regenerated(next, in.SecondRender, in.Release, p.Cluster, parsed); err != nil {
			return nil, nil, nil, err
		}
		if prev, err = manifest.SplitSharing(prevName, in.PreviousManifest, ns, p.Cluster, parsed); err != nil {
			return nil, nil, nil, err
		}
	}
	return prev, next, regen, nil
}
