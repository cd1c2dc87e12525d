package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/classify"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// derive returns the object the server would store for next, derived
// without asking it (by derivation: predict.Derive for Helm's patch,
// predict.DeriveApply for its server-side apply), or nil when the server's
// answer could differ (derivation's why, Observers.Observed) or
// --server-dry-run=all. liveObj is the object the update replaces; apply:
// Helm 4's server-side apply.
func (p *Planner) derive(ctx context.Context, next *manifest.Object, liveObj *unstructured.Unstructured, apply bool, derivation func() (*unstructured.Unstructured, string)) *unstructured.Unstructured {
	if p.ServerDryRun == ServerDryRunAll {
		p.Stats.asked("--server-dry-run=all")
		return nil
	}
	derived, why := derivation()
	if derived == nil {
		p.Stats.asked(why)
		return nil
	}
	if who := p.Cluster.Observers.Observed(ctx, next); who != "" {
		p.Stats.asked("seen by " + who)
		return nil
	}
	if why := p.Cluster.Observers.Warns(ctx, derived, p.ServerVersion); why != "" {
		// The verdict would be the same; the server's warning would be lost.
		p.Stats.asked(why)
		return nil
	}
	if why := p.Cluster.Observers.PoliciesAdmit(ctx, derived, liveObj, apply, p.ServerVersion); why != "" {
		// A refusal, a warning or an answer only the server has: its
		// dry-run carries the policy's own message.
		p.Stats.asked(why)
		return nil
	}
	p.Stats.derived()
	return derived
}

// dryRun asks the server for the predicted object and records its answer in
// u; offline, or when RBAC forbids the dry-run, it returns nil and the
// classifier falls back to the catalogue.
func (p *Planner) dryRun(ctx context.Context, c *plan.Change, u *classify.Update, next *manifest.Object, pt types.PatchType, patch []byte) (*unstructured.Unstructured, error) {
	predicted, dryErr := p.sendPatch(ctx, next, pt, patch)
	return p.answer(ctx, c, u, next, predicted, dryErr)
}

// dryRunApply is dryRun for Helm 4's server-side apply. It always asks
// without force first, to learn the apply's conflicts with other field
// managers (--force-conflicts hides them); when there are some, the object
// predicted is the one a forced apply would store, so the verdict can say
// what forcing does. When the release moves to server-side apply, Helm 4
// first hands Helm's own client-side fields to its apply (csaupgrade): a
// conflict with manager helm then does not happen, and is not returned.
// known are the conflicts found in the managed fields (decideApply): the
// unforced apply is then not sent.
func (p *Planner) dryRunApply(ctx context.Context, c *plan.Change, u *classify.Update, next *manifest.Object, toServerSide bool, known []predict.Conflict) (*unstructured.Unstructured, []predict.Conflict, error) {
	all := known
	var predicted *unstructured.Unstructured
	var dryErr error
	if len(all) == 0 {
		predicted, dryErr = p.sendApply(ctx, next, false)
		all = predict.Conflicts(dryErr)
	}
	if len(all) > 0 {
		predicted, dryErr = p.sendApply(ctx, next, true)
	}
	var conflicts []predict.Conflict
	for _, cf := range all {
		if !(toServerSide && cf.Manager == predict.FieldManager) {
			conflicts = append(conflicts, cf)
		}
	}
	predicted, err := p.answer(ctx, c, u, next, predicted, dryErr)
	return predicted, conflicts, err
}

// sendApply, sendCreate and sendPatch send a dry-run to the cluster, and
// count it.
func (p *Planner) sendApply(ctx context.Context, obj *manifest.Object, force bool) (*unstructured.Unstructured, error) {
	p.Stats.dryRun()
	return p.Cluster.DryRuns.DryRunApply(ctx, obj, force)
}

func (p *Planner) sendCreate(ctx context.Context, obj *manifest.Object) (*unstructured.Unstructured, error) {
	p.Stats.dryRun()
	return p.Cluster.DryRuns.DryRunCreate(ctx, obj)
}

func (p *Planner) sendPatch(ctx context.Context, obj *manifest.Object, pt types.PatchType, patch []byte) (*unstructured.Unstructured, error) {
	p.Stats.dryRun()
	return p.Cluster.DryRuns.DryRunPatch(ctx, obj, pt, patch)
}

// answer records the server's answer to a dry-run update in u.
func (p *Planner) answer(ctx context.Context, c *plan.Change, u *classify.Update, next *manifest.Object, predicted *unstructured.Unstructured, dryErr error) (*unstructured.Unstructured, error) {
	var notServed *live.KindNotServedError
	switch {
	case errors.Is(dryErr, live.ErrNoServer):
		return nil, nil
	case errors.As(dryErr, &notServed):
		return nil, fmt.Errorf("%s: %w", c.ID, dryErr)
	case dryErr == nil:
		u.Predicted = p.Masker.Object(predicted)
		c.Prediction = plan.PredictionServer
		return predicted, nil
	case apierrors.IsForbidden(dryErr) && strings.Contains(dryErr.Error(), "cannot patch resource"):
		c.Notes = append(c.Notes, "RBAC forbids a dry-run patch here; verdict from the catalogue: "+dryErr.Error())
	default:
		u.DryRunErr = dryErr
		c.Prediction = plan.PredictionServer
		if apierrors.IsInvalid(dryErr) {
			_, u.RecreateErr = p.sendCreate(ctx, next)
		}
	}
	return nil, nil
}

// rejectsObject reports whether the server refused the object itself (as
// opposed to being unable to answer).
func rejectsObject(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || applySchemaError(err) ||
		(apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "cannot create resource") && !strings.Contains(err.Error(), "cannot patch resource"))
}

// applySchemaError reports a server-side apply the server cannot type
// against the kind's schema (an unknown field: ".x: field not declared in
// schema"). The API server answers it as an internal error without causes,
// so its wording is all there is to match; Helm 4's upgrade fails on it.
func applySchemaError(err error) bool {
	return apierrors.IsInternalError(err) && strings.Contains(err.Error(), "failed to create typed patch object")
}

// sanitize renders a server error about obj, without values for Secrets.
func sanitize(err error, obj *unstructured.Unstructured) string {
	return classify.Sanitize(err.Error(), redact.Sensitive(obj)) // fail closed
}
