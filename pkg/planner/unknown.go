package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
)

// unknownFields names on c the fields of next the API server does not know
// (a misspelled or misplaced field: `imagePullPolic`, `spec.replica`): it
// drops them with nothing but a warning, so a chart with a typo passes
// every check otherwise. They join c.Pruned (the render is not what is
// stored), with a note quoting the server's warnings, which warned
// collected from the dry-runs made for next.
//
// The patch Helm sends holds only what changed, and a noop or derived
// update sends nothing, so a field unknown to the decoding of next's Go
// type (predict.UnknownFields, built-in kinds) that no answer named is
// asked about with a dry-run create of the whole object: the server decodes
// every field first (an existing object then answers AlreadyExists). The
// server decides: a field its newer version knows is not named. Offline, or
// when it cannot be asked, the decoding's own words are quoted, saying so.
// Helm 4's server-side apply validates strictly: an unknown field makes its
// dry-run fail, and the change invalid, already.
func (p *Planner) unknownFields(ctx context.Context, c *plan.Change, rel plan.Release, next *manifest.Object, exists bool, warned *predict.Warnings) {
	if rel.ServerSide() {
		return
	}
	builtin := predict.Builtin(next.GVK)
	var local []string
	if builtin {
		local = predict.UnknownFields(next.Obj)
	}
	texts := warned.Texts()
	unconfirmed := ""
	switch {
	case p.Cluster.Offline:
		texts, unconfirmed = local, "offline: found by decoding the render as the API server does, no server asked"
	case !builtin || !slices.ContainsFunc(local, func(l string) bool { return !slices.Contains(texts, l) }):
		// Every field the decoding finds, the server named already.
	case !exists && c.Prediction != plan.PredictionServer:
		texts, unconfirmed = union(texts, local), "found by decoding the render as the API server does; the server did not answer for the new object"
	case exists:
		_, err := p.Cluster.DryRuns.DryRunCreate(ctx, next)
		texts = warned.Texts()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			texts, unconfirmed = union(texts, local), "found by decoding the render as the API server does; the server could not be asked: "+sanitize(err, next.Obj)
		}
	}
	var paths []string
	for _, t := range texts {
		if path := predict.UnknownField(t); path != "" {
			paths = append(paths, path)
			if !slices.Contains(c.Pruned, path) {
				c.Pruned = append(c.Pruned, path)
			}
		}
	}
	if len(paths) == 0 {
		return
	}
	if !builtin {
		// notePruned explains these (the installed CRD); the server's words:
		c.Notes = append(c.Notes, "the API server warns: "+strings.Join(texts, "; "))
		return
	}
	quoted := "the API server warns: " + strings.Join(texts, "; ")
	if unconfirmed != "" {
		quoted = strings.Join(texts, "; ") + " (" + unconfirmed + ")"
	}
	c.Notes = append(c.Notes, fmt.Sprintf("%s: %s: %s; %s %s has no such field (misspelled or misplaced?), so Helm's upgrade stores the object without it",
		PrunedMessage, strings.Join(paths, ", "), quoted, next.GVK.GroupVersion(), next.GVK.Kind))
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
