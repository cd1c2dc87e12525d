// Package classify turns a predicted object change into a verdict: the
// update's class (in-place, rolling, recreate-required, invalid), the field
// paths that decide it and where that knowledge came from.
package classify

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/predict"
)

// MaxReasonPaths caps the field paths listed per verdict; the diff shows all.
const MaxReasonPaths = 12

// Classifier holds the catalogue; build one with New and share it.
type Classifier struct {
	catalogue catalogue
}

// New returns a Classifier.
func New() *Classifier { return &Classifier{catalogue: newCatalogue()} }

// Update describes one object the upgrade patches.
type Update struct {
	GroupKind schema.GroupKind
	// Live is the object in the cluster, Predicted what the server's dry-run
	// returned (nil when it rejected the patch), Local the patch applied
	// locally to Live (always set: it locates fields when the server only
	// names a parent, and stands in for Predicted when no dry-run was made).
	Live, Predicted, Local *unstructured.Unstructured
	// DryRunErr is the server's rejection of the dry-run patch.
	DryRunErr error
	// RecreateErr is the server's answer to a dry-run create of the new
	// object, asked only when the patch was rejected as immutable. nil means
	// a recreate would be accepted.
	RecreateErr error
	// Original and Target are the object in the last release manifest (nil
	// when it was not there) and in the new render. A field neither mentions
	// is the server's (a default, status): the local prediction may lack it
	// where the server would keep it, so it is not a change.
	Original, Target *unstructured.Unstructured
	// Secret hides values from server messages.
	Secret bool
	// Derived: Predicted was derived without asking the server (see
	// predict.Derive); the reasons say so.
	Derived bool
}

// Backfill returns a copy of the local prediction with the server-only
// fields it dropped (see localChanges) taken from live, so a diff of a
// rejected update shows only what the chart changes.
func (u Update) Backfill() *unstructured.Unstructured {
	if u.Local == nil || u.Live == nil {
		return u.Local
	}
	out := u.Local.DeepCopy()
	live := u.Live.Object
	kept := map[string]bool{}
	for _, p := range u.localChanges(live, out.Object) {
		kept[p] = true
	}
	for _, p := range ChangedPaths(live, out.Object) {
		if !kept[p] && !strings.HasPrefix(p, "status") {
			setPath(out.Object, p, Lookup(live, p))
		}
	}
	return out
}

// localChanges compares live with the local prediction, leaving out fields
// only the server sets: a patch that replaces a whole list (claim templates
// have no merge key) drops their defaults locally, not on the server.
func (u Update) localChanges(live, local map[string]interface{}) []string {
	var orig, target map[string]interface{}
	if u.Original != nil {
		orig = u.Original.Object
	}
	if u.Target != nil {
		target = u.Target.Object
	}
	var out []string
	for _, p := range ChangedPaths(live, local) {
		if u.Target != nil && Lookup(local, p) == nil && Lookup(orig, p) == nil && Lookup(target, p) == nil {
			continue
		}
		out = append(out, p)
	}
	return out
}

// Verdict is the classification of one update.
type Verdict struct {
	Class   plan.Class
	Reasons []plan.Reason
	Rollout *plan.Rollout
	// Noop is true when the predicted object equals the live one.
	Noop bool
}

// Classify decides the verdict for an update. Server answers win over the
// catalogue; the catalogue is used only when no dry-run answer exists.
func (c *Classifier) Classify(u Update) Verdict {
	if u.Derived && u.DryRunErr == nil && u.Predicted != nil {
		return derived(u)
	}
	live := Comparable(u.Live).Object
	if u.DryRunErr != nil {
		return c.rejected(u, live, Comparable(u.Local).Object)
	}
	source := plan.SourceServer
	predicted := Comparable(u.Predicted)
	if predicted == nil {
		source = plan.SourceCatalogue
		// The local prediction is compared only without a server answer.
		predicted = &unstructured.Unstructured{Object: keepAllocated(u.GroupKind, live, Comparable(u.Local).Object)}
	}
	changed := ChangedPaths(live, predicted.Object)
	if source == plan.SourceCatalogue {
		changed = u.localChanges(live, predicted.Object)
	}
	if len(changed) == 0 {
		return Verdict{Noop: true}
	}
	if source == plan.SourceCatalogue {
		// Validation first: an object the server rejects cannot be
		// recreated either.
		if reasons := Rejected(u.GroupKind, predicted); len(reasons) > 0 {
			return Verdict{Class: plan.ClassInvalid, Reasons: reasons}
		}
		if reasons := c.immutableReasons(u.GroupKind, changed, live, predicted.Object, plan.SourceCatalogue, ""); len(reasons) > 0 {
			return Verdict{Class: plan.ClassRecreateRequired, Reasons: reasons}
		}
	}
	if v, ok := templateChanged(u.GroupKind, changed, source, live, predicted.Object); ok {
		return v
	}
	return Verdict{Class: plan.ClassInPlace, Reasons: pathReasons(changed, "changed", source, live, predicted.Object)}
}

// derived classifies a derived prediction: Live with other top-level
// labels or annotations and, for a ConfigMap or a Secret, another payload,
// for a Service other ports, for a pod controller other container images,
// and nothing else (predict.Derive). The server's form of an object leaves
// those as they are (a Secret's data as stored, base64 or masked; no empty
// map; ports as the server returns them), so comparing them alone finds
// what comparing whole server forms would, without decoding either object.
func derived(u Update) Verdict {
	live, predicted := derivedParts(u.GroupKind, u.Live), derivedParts(u.GroupKind, u.Predicted)
	changed := ChangedPaths(live, predicted)
	if len(changed) == 0 {
		return Verdict{Noop: true}
	}
	if v, ok := templateChanged(u.GroupKind, changed, plan.SourceDerived, u.Live.Object, u.Predicted.Object); ok {
		return v
	}
	return Verdict{Class: plan.ClassInPlace, Reasons: pathReasons(changed, "changed", plan.SourceDerived, u.Live.Object, u.Predicted.Object)}
}

// templateChanged is the verdict of a pod controller whose pod template
// changed (changed holds paths under spec.template): rolling, for the
// template's changes alone. ok is false for any other change.
func templateChanged(gk schema.GroupKind, changed []string, source plan.Source, live, predicted map[string]interface{}) (Verdict, bool) {
	if !podTemplateKinds[gk] {
		return Verdict{}, false
	}
	var template []string
	for _, p := range changed {
		if Under(p, "spec.template") {
			template = append(template, p)
		}
	}
	if len(template) == 0 {
		return Verdict{}, false
	}
	return Verdict{
		Class:   plan.ClassRolling,
		Reasons: pathReasons(template, "pod template changed", source, live, predicted),
		Rollout: Rollout(gk, predicted),
	}, true
}

// payloadKinds are the kinds whose payload a derived prediction may change.
var payloadKinds = map[schema.GroupKind]bool{{Kind: "ConfigMap"}: true, {Kind: "Secret"}: true}

// derivedParts is obj with nothing but the fields a derived prediction may
// change: its metadata labels and annotations, for payloadKinds its
// non-empty data and binaryData, for a Service its spec.ports, for a pod
// controller its containers' images.
func derivedParts(gk schema.GroupKind, obj *unstructured.Unstructured) map[string]interface{} {
	meta := map[string]interface{}{}
	for _, f := range []string{"labels", "annotations"} {
		if v, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", f); ok {
			meta[f] = v
		}
	}
	out := map[string]interface{}{"metadata": meta}
	if payloadKinds[gk] {
		for _, f := range []string{"data", "binaryData"} {
			if v, ok := obj.Object[f].(map[string]interface{}); ok && len(v) > 0 {
				out[f] = v
			}
		}
	}
	if gk == serviceKind {
		if v, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "ports"); ok {
			out["spec"] = map[string]interface{}{"ports": v}
		}
	}
	if podTemplateKinds[gk] {
		// Each container's image, at its index: the paths a whole
		// comparison names.
		pod := map[string]interface{}{}
		for _, list := range []string{"initContainers", "containers"} {
			items, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "template", "spec", list)
			cs, ok := items.([]interface{})
			if !ok {
				continue
			}
			images := make([]interface{}, len(cs))
			for i, c := range cs {
				m, _ := c.(map[string]interface{})
				images[i] = map[string]interface{}{"image": m["image"]}
			}
			pod[list] = images
		}
		if len(pod) > 0 {
			out["spec"] = map[string]interface{}{"template": map[string]interface{}{"spec": pod}}
		}
	}
	return out
}

// serviceKind is the kind whose ports a derived prediction may change.
var serviceKind = schema.GroupKind{Kind: "Service"}

// Comparable is the form objects are compared in: as the server holds them
// (ServerForm: a Secret's stringData folded into data), without
// server-managed fields. The local prediction then differs from live only
// where the server would see a change, whether or not a dry-run was made.
func Comparable(obj *unstructured.Unstructured) *unstructured.Unstructured {
	return Normalize(predict.ServerForm(obj))
}

// rejected classifies a dry-run patch the server refused.
func (c *Classifier) rejected(u Update, live, local map[string]interface{}) Verdict {
	status, ok := apiStatus(u.DryRunErr)
	if !ok || status.Reason != metav1.StatusReasonInvalid {
		// Admission denial, bad request, conflict: recreating would not help.
		if rs := u.typeReasons(u.DryRunErr.Error(), live, local); rs != nil {
			return Verdict{Class: plan.ClassInvalid, Reasons: rs}
		}
		return Verdict{Class: plan.ClassInvalid, Reasons: []plan.Reason{{
			Path: "", Message: Sanitize(u.DryRunErr.Error(), u.Secret), Source: plan.SourceServer}}}
	}
	var immutable, other []metav1.StatusCause
	for _, cause := range causes(status) {
		if c.isImmutableCause(u.GroupKind, cause, live, local) {
			immutable = append(immutable, cause)
		} else {
			other = append(other, cause)
		}
	}
	if len(immutable) == 0 {
		return Verdict{Class: plan.ClassInvalid, Reasons: u.typeCauseReasons(other, live, local)}
	}
	if !recreateAccepted(u.RecreateErr) {
		// The new object itself is rejected: recreating it would fail too.
		rs, _ := apiStatus(u.RecreateErr)
		reasons := causeReasons(causes(rs), u.Secret)
		if len(reasons) == 0 {
			reasons = []plan.Reason{{Message: Sanitize(u.RecreateErr.Error(), u.Secret), Source: plan.SourceServer}}
		}
		return Verdict{Class: plan.ClassInvalid, Reasons: reasons}
	}
	changed := u.localChanges(live, local)
	var reasons []plan.Reason
	seen := map[string]bool{}
	for _, cause := range immutable {
		field := cause.Field
		var under []string
		for _, p := range changed {
			if Under(p, field) {
				under = append(under, p)
			}
		}
		// A coarse cause ("spec: Forbidden") names the parent; the catalogue
		// and the local comparison name the fields that really changed.
		found := c.immutableReasons(u.GroupKind, under, live, local, plan.SourceServer, causeMessage(cause, u.Secret))
		if len(found) == 0 {
			found = pathReasons(under, causeMessage(cause, u.Secret), plan.SourceServer, live, local)
		}
		if len(found) == 0 {
			found = []plan.Reason{{Path: cause.Field, Message: causeMessage(cause, u.Secret), Source: plan.SourceServer}}
		}
		for _, r := range found {
			if !seen[r.Path] {
				seen[r.Path] = true
				reasons = append(reasons, r)
			}
		}
	}
	return Verdict{Class: plan.ClassRecreateRequired, Reasons: capReasons(reasons)}
}

// immutablePhrases are the API server's wordings for "this field cannot be
// changed on an existing object" across kinds and versions 1.34–1.37.
var immutablePhrases = regexp.MustCompile(`(?i)(field is immutable|is immutable after creation|may not change once set|may not be changed|cannot change roleref|updates to [a-z]+ spec for fields other than|updates to [a-zA-Z]+ are forbidden|field is immutable when)`)

// isImmutableCause reports whether a validation cause says the field cannot
// change: the catalogue names its field, or the server's message does.
func (c *Classifier) isImmutableCause(kind schema.GroupKind, cause metav1.StatusCause, live, local map[string]interface{}) bool {
	if cause.Type != metav1.CauseTypeFieldValueInvalid && cause.Type != metav1.CauseTypeForbidden {
		return false
	}
	if immutablePhrases.MatchString(cause.Message) {
		return true
	}
	// The server words some immutability differently (a bound claim that
	// shrinks: "can not be less than ..."); the catalogue knows the field.
	r := c.catalogue.immutableAt(kind, cause.Field, live, local)
	return r != nil && r.path == cause.Field
}

// immutableReasons returns a reason for each changed path the catalogue marks
// immutable. message, when set, replaces the catalogue's wording (the server
// said it first).
func (c *Classifier) immutableReasons(kind schema.GroupKind, changed []string, live, predicted map[string]interface{}, source plan.Source, message string) []plan.Reason {
	var reasons []plan.Reason
	for _, p := range changed {
		r := c.catalogue.immutableAt(kind, p, live, predicted)
		if r == nil {
			continue
		}
		msg := r.message
		if message != "" {
			msg = message
		}
		reasons = append(reasons, reason(p, msg, source, live, predicted))
	}
	return capReasons(reasons)
}

func reason(path, message string, source plan.Source, live, predicted map[string]interface{}) plan.Reason {
	return plan.Reason{Path: path, Message: message, Source: source,
		Before: render(Lookup(live, path)), After: render(Lookup(predicted, path))}
}

func pathReasons(paths []string, message string, source plan.Source, live, predicted map[string]interface{}) []plan.Reason {
	var out []plan.Reason
	for _, p := range paths {
		out = append(out, reason(p, message, source, live, predicted))
	}
	return capReasons(out)
}

func capReasons(rs []plan.Reason) []plan.Reason {
	if len(rs) <= MaxReasonPaths {
		return rs
	}
	more := len(rs) - MaxReasonPaths
	rs = append(rs[:MaxReasonPaths:MaxReasonPaths], plan.Reason{Path: "…", Message: fmt.Sprintf("and %d more field(s); see the diff", more), Source: rs[0].Source})
	return rs
}

func render(v interface{}) string {
	if v == nil {
		return "<unset>"
	}
	return fmt.Sprintf("%v", v)
}

func apiStatus(err error) (metav1.Status, bool) {
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		return s.Status(), true
	}
	return metav1.Status{}, false
}

func causes(s metav1.Status) []metav1.StatusCause {
	if s.Details == nil {
		return nil
	}
	return s.Details.Causes
}

// recreateAccepted: a dry-run create of an existing name that passes
// validation fails only in storage, with AlreadyExists.
func recreateAccepted(err error) bool { return err == nil || apierrors.IsAlreadyExists(err) }

func causeReasons(cs []metav1.StatusCause, secret bool) []plan.Reason {
	var out []plan.Reason
	for _, c := range cs {
		out = append(out, plan.Reason{Path: c.Field, Message: causeMessage(c, secret), Source: plan.SourceServer})
	}
	return out
}

// echoedValue splits "Invalid value: <value>: <detail>".
var echoedValue = regexp.MustCompile(`(?s)^Invalid value: (.*): ([^:]+)$`)

// causeMessage is the server's message without a long echoed value (the
// whole claim template list, say): the diff shows the values.
func causeMessage(c metav1.StatusCause, secret bool) string {
	if m := echoedValue.FindStringSubmatch(c.Message); m != nil && len(m[1]) > 60 {
		return m[2]
	}
	return Sanitize(c.Message, secret)
}

// invalidValue matches the value the server echoes in field errors; it is
// greedy on purpose: removing too much is safe, leaving a fragment is not.
var invalidValue = regexp.MustCompile(`Invalid value: .*: `)

// Sanitize removes echoed values from server messages about Secrets: a
// Secret's value must never reach any output.
func Sanitize(msg string, secret bool) string {
	if !secret {
		return msg
	}
	return invalidValue.ReplaceAllString(msg, "Invalid value: (redacted): ")
}

// ReplaceRefused returns the reasons of Helm's --force PUT (helm
// updateResource's replace) that the server refused, one per cause with its
// field path: the upgrade fails on this object whatever its patch would do,
// so there is nothing to recreate. Values echoed for a Secret are removed.
func ReplaceRefused(err error, secret bool) []plan.Reason {
	const prefix = "Helm's --force replaces the object with PUT, which the server refuses: "
	status, _ := apiStatus(err)
	var out []plan.Reason
	for _, c := range causes(status) {
		out = append(out, plan.Reason{Path: c.Field, Message: prefix + causeMessage(c, secret), Source: plan.SourceServer})
	}
	if len(out) == 0 {
		out = []plan.Reason{{Message: prefix + Sanitize(err.Error(), secret), Source: plan.SourceServer}}
	}
	return capReasons(out)
}
