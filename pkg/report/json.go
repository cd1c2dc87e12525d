package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

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
	// Outcome: what the watch after an apply observed; only in the
	// document of an applied, watched plan.
	Outcome *jsonOutcome `json:"outcome,omitempty"`
	// Uninstalled: what an applied uninstall left; only in its document.
	Uninstalled *jsonUninstalled `json:"uninstalled,omitempty"`
}

type jsonOutcome struct {
	AsPredicted int                 `json:"asPredicted"`
	Differ      int                 `json:"differ"`
	Failed      int                 `json:"failed"`
	TimedOut    bool                `json:"timedOut"`
	Interrupted bool                `json:"interrupted,omitempty"`
	Seconds     float64             `json:"seconds"`
	Objects     []jsonObjectOutcome `json:"objects"`
}

type jsonObjectOutcome struct {
	Kind         string `json:"kind"`
	Group        string `json:"group,omitempty"`
	Namespace    string `json:"namespace"`
	Name         string `json:"name"`
	State        string `json:"state"`
	Detail       string `json:"detail,omitempty"`
	Reason       string `json:"reason,omitempty"`
	Predicted    string `json:"predicted,omitempty"`
	Observed     string `json:"observed,omitempty"`
	AsPredicted  bool   `json:"asPredicted"`
	PodsBefore   int    `json:"podsBefore"`
	PodsKept     int    `json:"podsKept"`
	ClaimsBefore int    `json:"claimsBefore"`
	ClaimsKept   int    `json:"claimsKept"`
}

type jsonRelease struct {
	Name            string `json:"name"`
	Namespace       string `json:"namespace"`
	Operation       string `json:"operation"`
	Revision        int    `json:"revision"`
	Chart           string `json:"chart"`
	CurrentRevision int    `json:"currentRevision"`
	RollbackTo      int    `json:"rollbackTo,omitempty"`
	Install         bool   `json:"install,omitempty"`
	ApplyMethod     string `json:"applyMethod,omitempty"`
	ForceConflicts  bool   `json:"forceConflicts,omitempty"`
	ForceReplace    bool   `json:"forceReplace,omitempty"`
	SyncedBy        string `json:"syncedBy,omitempty"`
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
	// StaleConfig counts the changed ConfigMaps and Secrets some running
	// pods do not see, StaleWorkloads those pods' workloads.
	StaleConfig    int `json:"staleConfig,omitempty"`
	StaleWorkloads int `json:"staleWorkloads,omitempty"`
	// Restarts counts the workloads --restart-stale restarts after the
	// upgrade (each change's restartedFor says for what).
	Restarts int `json:"restarts,omitempty"`
}

type jsonChange struct {
	APIVersion   string `json:"apiVersion"`
	Kind         string `json:"kind"`
	Namespace    string `json:"namespace"`
	Name         string `json:"name"`
	Action       string `json:"action"`
	Class        string `json:"class,omitempty"`
	Destructive  bool   `json:"destructive"`
	Acknowledged bool   `json:"acknowledged"`
	AckedBy      string `json:"ackedBy,omitempty"`
	Blocking     bool   `json:"blocking,omitempty"`
	Regenerated  bool   `json:"regenerated,omitempty"`
	Ignored      bool   `json:"ignored,omitempty"`
	Fingerprint  string `json:"fingerprint"`
	// Prediction: server (a dry-run answered) or derived (not asked: its
	// answer cannot differ); omitted when neither (noops, deletions,
	// catalogue verdicts).
	Prediction string       `json:"prediction,omitempty"`
	Reasons    []jsonReason `json:"reasons"`
	Diff       string       `json:"diff"`
	Rollout    *jsonRollout `json:"rollout,omitempty"`
	Drift      []jsonDrift  `json:"drift,omitempty"`
	Notes      []string     `json:"notes,omitempty"`
	// Pruned: fields the render sets that the server drops (a custom
	// resource's that the installed CRD does not define, any object's that
	// the API server does not know); counted as a change.
	Pruned []string `json:"pruned,omitempty"`
	// Consumers: of a changed ConfigMap or Secret, the workloads that read
	// it and what their running pods see.
	Consumers []jsonConsumer `json:"consumers,omitempty"`
	// RestartedFor: of a workload --restart-stale restarts, the changed
	// ConfigMaps and Secrets its pods would not see otherwise.
	RestartedFor []string `json:"restartedFor,omitempty"`
}

// jsonConsumer is the workload (kind, group, namespace, name: the
// object reference an uninstall's objects have too) and how it reads.
type jsonConsumer struct {
	jsonObjectRef
	Outside   bool   `json:"outside,omitempty"`
	Container string `json:"container,omitempty"`
	Via       string `json:"via"`
	Key       string `json:"key,omitempty"`
	Env       string `json:"env,omitempty"`
	Optional  bool   `json:"optional,omitempty"`
	// ServiceAccount lists the Secret an imagePullSecrets read is of.
	ServiceAccount string `json:"serviceAccount,omitempty"`
	Missing        bool   `json:"missing,omitempty"`
	Sees           string `json:"sees"`
	// NotRestarted says why --restart-stale leaves a stale reader.
	NotRestarted string `json:"notRestarted,omitempty"`
	Message      string `json:"message"`
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
	// Consumer: the workload whose next pod the change makes fail.
	Consumer string `json:"consumer,omitempty"`
}

// jsonReasonOf is r in the JSON documents (the plan's and status's).
func jsonReasonOf(r plan.Reason) jsonReason {
	return jsonReason{Path: r.Path, Message: r.Message, Source: string(r.Source), Regenerated: r.Regenerated, IgnoredBy: r.IgnoredBy, IgnoredIn: r.IgnoredIn, Manager: r.Manager, Consumer: r.Consumer}
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
//
// The changes are streamed: each is encoded, with its diff, and written
// before the next batch is diffed, so the report holds a batch of diffs at a
// time, never the whole document. The bytes are those of encoding the whole
// document at once (the golden files pin them). An error after part of the
// document reached w says so: a consumer must not take what it holds for a
// plan.
func (pw *planWriter) writeJSON(w io.Writer) error {
	cw := &countingWriter{w: w}
	if err := pw.streamJSON(cw); err != nil {
		if cw.n > 0 {
			return fmt.Errorf("%w (the JSON document on the output is incomplete: %d bytes were written)", err, cw.n)
		}
		return err
	}
	return nil
}

// countingWriter counts the bytes w accepted.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// streamJSON is writeJSON but for what it says of an error.
func (pw *planWriter) streamJSON(w io.Writer) error {
	doc, err := pw.jsonDocument()
	if err != nil {
		return err
	}
	changes := sortedChanges(pw.plan)
	head, err := encodeJSON(doc, "")
	if err != nil {
		return err
	}
	if len(changes) == 0 {
		_, err := w.Write(head)
		return err
	}
	// doc has no changes: its "changes": [] is where they go. A newline
	// inside a string is escaped, so this appears once, at the top level.
	at := bytes.Index(head, jsonChangesMarker)
	if at < 0 {
		return errors.New("report: no changes field in the JSON document")
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(head[:at])
	bw.WriteString("\n  \"changes\": [\n")
	s := diffSides(pw.plan)
	for start := 0; start < len(changes); start += jsonBatch {
		batch := changes[start:min(start+jsonBatch, len(changes))]
		diffs, err := diffAll(batch, pw.opts.Context, s)
		if err != nil {
			return err
		}
		for i, c := range batch {
			item, err := encodeJSON(toJSONChange(c, diffs[i]), "    ")
			if err != nil {
				return err
			}
			bw.WriteString("    ")
			bw.Write(item[:len(item)-1]) // without the encoder's newline
			if start+i < len(changes)-1 {
				bw.WriteByte(',')
			}
			bw.WriteByte('\n')
		}
	}
	bw.WriteString("  ]")
	bw.Write(head[at+len(jsonChangesMarker):])
	return bw.Flush()
}

// jsonBatch is how many changes are diffed (in parallel) before they are
// written.
const jsonBatch = 64

// jsonChangesMarker is the empty changes array of a document encoded
// without its changes.
var jsonChangesMarker = []byte("\n  \"changes\": []")

// encodeJSON encodes v as writeJSON does, each line after the first
// indented by prefix, with the encoder's trailing newline.
func encodeJSON(v interface{}, prefix string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent(prefix, "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// sortedChanges are p's changes in report order: by kind, namespace and
// name.
func sortedChanges(p *plan.Plan) []*plan.Change {
	changes := make([]*plan.Change, len(p.Changes))
	for i := range p.Changes {
		changes[i] = &p.Changes[i]
	}
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].ID.Less(changes[j].ID) })
	return changes
}

// jsonDocument is the document without its changes (writeJSON streams
// them).
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
			RollbackTo:      p.Release.RollbackTo,
			Operation:       string(p.Release.Op()),
			Install:         p.Release.Installs(),
			ApplyMethod:     p.Release.ApplyMethod,
			ForceConflicts:  p.Release.ForceConflicts,
			ForceReplace:    p.Release.ForceReplace,
			SyncedBy:        p.Release.SyncedBy,
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
		Changes:       []jsonChange{},
		ServerVersion: p.ServerVersion,
		Offline:       p.Offline,
		Notes:         p.Notes,
		Blockers:      p.Blockers,
		Outcome:       toJSONOutcome(p.Outcome),
		Uninstalled:   toJSONUninstalled(p.Uninstalled),
	}
	doc.Summary.StaleConfig, doc.Summary.StaleWorkloads = p.StaleConfig()
	doc.Summary.Restarts = len(p.Restarts())
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
		Prediction:   string(c.Prediction),
		Reasons:      make([]jsonReason, 0, len(c.Reasons)),
		Diff:         diff,
		Notes:        c.Notes,
		Pruned:       c.Pruned,
	}
	if c.Action == plan.ActionUpdate || c.Class == plan.ClassDataLoss || c.Class == plan.ClassRecreatable {
		jc.Class = string(c.Class) // an update's, or an uninstall's verdict on a deletion
	}
	for _, r := range c.Reasons {
		jc.Reasons = append(jc.Reasons, jsonReasonOf(r))
	}
	jc.Rollout = toJSONRollout(c.Rollout)
	for _, d := range c.Drift {
		jc.Drift = append(jc.Drift, jsonDrift{Path: d.Path, Reverted: d.Reverted, Manager: d.Manager})
	}
	jc.RestartedFor = c.RestartedFor
	for _, u := range c.Consumers {
		jc.Consumers = append(jc.Consumers, jsonConsumer{jsonObjectRef: objectRef(u.Workload), Outside: u.Outside,
			Container: u.Container, Via: string(u.Via), Key: u.Key, Env: u.Env, Optional: u.Optional, ServiceAccount: u.ServiceAccount, Missing: u.Missing, Sees: string(u.Sees), NotRestarted: u.NotRestarted, Message: u.Text()})
	}
	return jc
}

// toJSONRollout is the rollout of a change or of a status's object; nil
// for none.
func toJSONRollout(r *plan.Rollout) *jsonRollout {
	if r == nil {
		return nil
	}
	return &jsonRollout{Replicas: r.Replicas, Strategy: r.Strategy, Impact: r.Impact}
}

func toJSONOutcome(o *plan.Outcome) *jsonOutcome {
	if o == nil {
		return nil
	}
	jo := &jsonOutcome{AsPredicted: o.AsPredicted, Differ: o.Differ, Failed: o.Failed, TimedOut: o.TimedOut, Interrupted: o.Interrupted,
		Seconds: o.Elapsed.Round(time.Millisecond).Seconds(), Objects: make([]jsonObjectOutcome, 0, len(o.Objects))}
	for _, ob := range o.Objects {
		jo.Objects = append(jo.Objects, jsonObjectOutcome{Kind: ob.ID.Kind, Group: ob.ID.Group, Namespace: ob.ID.Namespace, Name: ob.ID.Name,
			State: ob.State, Detail: ob.Detail, Reason: ob.Reason, Predicted: ob.Predicted, Observed: ob.Observed, AsPredicted: ob.AsPredicted,
			PodsBefore: ob.PodsBefore, PodsKept: ob.PodsKept, ClaimsBefore: ob.ClaimsBefore, ClaimsKept: ob.ClaimsKept})
	}
	return jo
}
