package planner

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
)

// addSecrets collects the Secret values of the objects of sets.
func addSecrets(san *redact.Sanitizer, sets ...*manifest.Set) {
	for _, s := range sets {
		for _, o := range s.Objects() {
			if o.Loaded() { // the others hold no secret value (manifest.Object.Load)
				san.Add(o.Obj)
			}
		}
	}
}

// sanitizeChanges removes Secret values from every text of changes: the
// reasons and notes carry the API server's messages (dry-run errors,
// admission and webhook denials), which can echo request data, and which
// reach every output form and saved plans: they go through the printer of
// text from elsewhere (redact.Sanitizer.Text: masked, escaped, bounded),
// the values a reason compares only masked. It runs once
// every live object has been read, so values only the cluster holds count
// too, and before fingerprints are computed.
//
// It also masks, in the objects each change shows, every Secret value a
// chart copies into an object that is not a Secret (a connection URL in a
// ConfigMap, an env var), and returns, for the chart's author, where the
// new render does (each also a note of its change).
func sanitizeChanges(changes []plan.Change, san *redact.Sanitizer) []string {
	var copies []string
	for i := range changes {
		c := &changes[i]
		if found := maskPair(&c.Before, &c.After, c.ID.Kind, c.ID.String(), san); found != "" {
			copies = append(copies, found)
			c.Notes = append(c.Notes, found)
		}
		for j := range c.Reasons {
			r := &c.Reasons[j]
			r.Path, r.Message = san.Text(r.Path, redact.MessageLimit), san.Text(r.Message, redact.MessageLimit)
			r.Before, r.After = san.String(r.Before), san.String(r.After)
		}
		for j := range c.Notes {
			c.Notes[j] = san.Text(c.Notes[j], redact.MessageLimit)
		}
	}
	return copies
}

// sanitizeHooks masks the Secret values copied into hooks that are not
// Secrets (a Job's env or command), as sanitizeChanges does for objects,
// and returns where the new hooks copy one.
func sanitizeHooks(hooks []plan.Hook, san *redact.Sanitizer) []string {
	var copies []string
	for i := range hooks {
		h := &hooks[i]
		if found := maskPair(&h.Before, &h.After, h.Kind, "hook "+h.Kind+"/"+h.Name, san); found != "" {
			copies = append(copies, found)
		}
	}
	return copies
}

// maskPair masks the Secret values copied into before (the live or last
// form) and after (the new one) of what, a kind, and returns the finding
// where after holds one, "" when it holds none.
func maskPair(before, after **unstructured.Unstructured, kind, what string, san *redact.Sanitizer) string {
	*before, _ = maskCopies(*before, san)
	var paths []string
	if *after, paths = maskCopies(*after, san); len(paths) == 0 {
		return ""
	}
	return copiedSecret(kind, what, paths)
}

// maskCopies masks the Secret values obj copies (redact.Sanitizer.Object)
// unless obj is a Secret, whose values are masked whole already.
func maskCopies(obj *unstructured.Unstructured, san *redact.Sanitizer) (*unstructured.Unstructured, []string) {
	if obj == nil || redact.Sensitive(obj) {
		return obj, nil
	}
	return san.Object(obj)
}

// copiedSecret is the finding for the chart's author: what copies a
// Secret's value, and where.
func copiedSecret(kind, what string, paths []string) string {
	return fmt.Sprintf("%s holds a value of one of the release's Secrets in %s (masked here): anyone who can read %ss in the namespace can read it; reference the Secret instead (secretKeyRef, a mounted Secret)",
		what, strings.Join(paths, ", "), kind)
}

// sanitizer is the plan's sanitiser (Planner.Sanitizer, or one of its own)
// with the Secret values of both releases' objects and hooks: server and
// Helm messages are sanitised of every one of them.
func (p *Planner) sanitizer(in Input, prev, next *manifest.Set) *redact.Sanitizer {
	san := p.Sanitizer
	if san == nil {
		san = redact.NewSanitizer(p.Masker)
	}
	addSecrets(san, prev, next)
	for _, hs := range [][]HookManifest{in.Hooks, in.PreviousHooks} {
		for _, h := range hs {
			san.AddManifest(h.Manifest) // a hook Secret's values, copied elsewhere
		}
	}
	return san
}
