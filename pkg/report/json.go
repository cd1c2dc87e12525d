package report

import (
	"encoding/json"
	"io"
	"sort"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// The JSON document is the versioned contract of GUIDE §3. These types are
// its only definition: they copy from the plan field by field, so that a
// change of the domain model never changes the output by accident. Field
// order is output order.

type jsonPlan struct {
	APIVersion    string       `json:"apiVersion"`
	Release       jsonRelease  `json:"release"`
	Summary       jsonSummary  `json:"summary"`
	Changes       []jsonChange `json:"changes"`
	ServerVersion string       `json:"serverVersion,omitempty"`
	Offline       bool         `json:"offline,omitempty"`
	Hooks         []jsonHook   `json:"hooks,omitempty"`
	Notes         []string     `json:"notes,omitempty"`
	Blockers      []string     `json:"blockers,omitempty"`
}

type jsonRelease struct {
	Name            string `json:"name"`
	Namespace       string `json:"namespace"`
	Revision        int    `json:"revision"`
	Chart           string `json:"chart"`
	CurrentRevision int    `json:"currentRevision"`
	Install         bool   `json:"install,omitempty"`
	ApplyMethod     string `json:"applyMethod,omitempty"`
	ForceConflicts  bool   `json:"forceConflicts,omitempty"`
}

type jsonSummary struct {
	Create      int `json:"create"`
	Delete      int `json:"delete"`
	Noop        int `json:"noop"`
	InPlace     int `json:"inPlace"`
	Rolling     int `json:"rolling"`
	Recreate    int `json:"recreate"`
	Destructive int `json:"destructive"`
	Blocked     int `json:"blocked"`
	Invalid     int `json:"invalid"`
	Regenerated int `json:"regenerated"`
	Ignored     int `json:"ignored"`
	Manual      int `json:"manual,omitempty"`
}

type jsonChange struct {
	APIVersion   string       `json:"apiVersion"`
	Kind         string       `json:"kind"`
	Namespace    string       `json:"namespace"`
	Name         string       `json:"name"`
	Action       string       `json:"action"`
	Class        string       `json:"class,omitempty"`
	Destructive  bool         `json:"destructive"`
	Acknowledged bool         `json:"acknowledged"`
	AckedBy      string       `json:"ackedBy,omitempty"`
	Blocking     bool         `json:"blocking,omitempty"`
	Regenerated  bool         `json:"regenerated,omitempty"`
	Ignored      bool         `json:"ignored,omitempty"`
	Fingerprint  string       `json:"fingerprint"`
	Reasons      []jsonReason `json:"reasons"`
	Diff         string       `json:"diff"`
	Rollout      *jsonRollout `json:"rollout,omitempty"`
	Drift        []jsonDrift  `json:"drift,omitempty"`
	Notes        []string     `json:"notes,omitempty"`
}

type jsonReason struct {
	Path    string `json:"path"`
	Message string `json:"message"`
	Source  string `json:"source"`
	// Regenerated: the value differs on every render (never counted).
	Regenerated bool `json:"regenerated,omitempty"`
	// IgnoredBy: the user's rule that covers the field; IgnoredIn: where
	// it was given (--ignore, or a rules file and the rule's position).
	IgnoredBy string `json:"ignoredBy,omitempty"`
	IgnoredIn string `json:"ignoredIn,omitempty"`
	Manager   string `json:"manager,omitempty"`
}

type jsonRollout struct {
	Replicas int64  `json:"replicas"`
	Strategy string `json:"strategy"`
	Impact   string `json:"impact"`
}

type jsonDrift struct {
	Path     string `json:"path"`
	Reverted bool   `json:"reverted"`
	Manager  string `json:"manager,omitempty"`
}

type jsonHook struct {
	Kind           string   `json:"kind"`
	Name           string   `json:"name"`
	Events         []string `json:"events"`
	DeletePolicies []string `json:"deletePolicies,omitempty"`
	Weight         int      `json:"weight,omitempty"`
	Action         string   `json:"action,omitempty"`
	RunsAtApply    bool     `json:"runsAtApply"`
	Diff           string   `json:"diff,omitempty"`
}

// writeJSON writes the plan as the safe-upgrade/v1 document: 2-space
// indent, HTML characters unescaped (diffs stay readable), trailing newline.
// Changes are sorted by kind, namespace and name, noops included.
func (pw *planWriter) writeJSON(w io.Writer) error {
	doc, err := pw.jsonDocument()
	if err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(doc)
}

func (pw *planWriter) jsonDocument() (*jsonPlan, error) {
	p := pw.plan
	s := p.Summary()
	doc := &jsonPlan{
		APIVersion: plan.APIVersion,
		Release: jsonRelease{
			Name:            p.Release.Name,
			Namespace:       p.Release.Namespace,
			Revision:        p.Release.Revision,
			Chart:           p.Release.Chart,
			CurrentRevision: p.Release.CurrentRevision,
			Install:         p.Release.Install,
			ApplyMethod:     p.Release.ApplyMethod,
			ForceConflicts:  p.Release.ForceConflicts,
		},
		Summary: jsonSummary{
			Create:      s.Create,
			Delete:      s.Delete,
			Noop:        s.Noop,
			InPlace:     s.InPlace,
			Rolling:     s.Rolling,
			Recreate:    s.Recreate,
			Destructive: s.Destructive,
			Blocked:     s.Blocked,
			Invalid:     s.Invalid,
			Regenerated: s.Regenerated,
			Ignored:     s.Ignored,
			Manual:      s.Manual,
		},
		Changes:       make([]jsonChange, 0, len(p.Changes)),
		ServerVersion: p.ServerVersion,
		Offline:       p.Offline,
		Notes:         p.Notes,
		Blockers:      p.Blockers,
	}
	hdiffs, err := hookDiffs(p.Hooks, pw.opts.Context)
	if err != nil {
		return nil, err
	}
	for i, h := range p.Hooks {
		events := h.Events
		if events == nil {
			events = []string{}
		}
		doc.Hooks = append(doc.Hooks, jsonHook{Kind: h.Kind, Name: h.Name, Events: events, DeletePolicies: h.DeletePolicies,
			Weight: h.Weight, Action: string(h.Action), RunsAtApply: h.RunsAtApply, Diff: hdiffs[i]})
	}

	changes := make([]*plan.Change, len(p.Changes))
	for i := range p.Changes {
		changes[i] = &p.Changes[i]
	}
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].ID.Less(changes[j].ID) })
	diffs, err := diffAll(changes, pw.opts.Context, diffSides(p))
	if err != nil {
		return nil, err
	}
	for i, c := range changes {
		doc.Changes = append(doc.Changes, toJSONChange(c, diffs[i]))
	}
	return doc, nil
}

func toJSONChange(c *plan.Change, diff string) jsonChange {
	jc := jsonChange{
		APIVersion:   c.APIVersion,
		Kind:         c.ID.Kind,
		Namespace:    c.ID.Namespace,
		Name:         c.ID.Name,
		Action:       string(c.Action),
		Destructive:  c.Destructive,
		Acknowledged: c.Acknowledged,
		AckedBy:      c.AckedBy,
		Blocking:     c.Blocking,
		Regenerated:  c.Regenerated,
		Ignored:      c.Ignored,
		Fingerprint:  c.Fingerprint,
		Reasons:      make([]jsonReason, 0, len(c.Reasons)),
		Diff:         diff,
		Notes:        c.Notes,
	}
	if c.Action == plan.ActionUpdate {
		jc.Class = string(c.Class)
	}
	for _, r := range c.Reasons {
		jc.Reasons = append(jc.Reasons, jsonReason{Path: r.Path, Message: r.Message, Source: string(r.Source), Regenerated: r.Regenerated, IgnoredBy: r.IgnoredBy, IgnoredIn: r.IgnoredIn, Manager: r.Manager})
	}
	if r := c.Rollout; r != nil {
		jc.Rollout = &jsonRollout{Replicas: r.Replicas, Strategy: r.Strategy, Impact: r.Impact}
	}
	for _, d := range c.Drift {
		jc.Drift = append(jc.Drift, jsonDrift{Path: d.Path, Reverted: d.Reverted, Manager: d.Manager})
	}
	return jc
}
