package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// StatusKind is the kind of the JSON document of `status`, versioned with
// the plan's (plan.APIVersion): {apiVersion, kind: Status, …}.
const StatusKind = "Status"

// WriteStatus writes st to w in format (text, json, markdown or sarif).
// Its texts came through the run's sanitiser already.
func WriteStatus(w io.Writer, st *plan.Status, format string) error {
	switch format {
	case "", FormatText:
		return writeStatusText(w, st)
	case FormatJSON:
		return writeStatusJSON(w, st)
	case FormatMarkdown:
		return writeStatusMarkdown(w, st)
	case FormatSARIF:
		return writeStatusSARIF(w, st)
	}
	return fmt.Errorf("unknown output format %q (want %s)", format, FormatList())
}

// StatusLine is the one-line summary of st.
func StatusLine(st *plan.Status) string {
	s := st.Summary()
	return fmt.Sprintf("%d release(s): %d object(s) in sync, %d drifted, %d missing, %d extra", len(st.Releases), s.InSync, s.Drifted, s.Missing, s.Extra)
}

// releaseHeader is a release's first line.
func releaseHeader(r *plan.ReleaseStatus) string {
	s := fmt.Sprintf("Release %s/%s revision %d (chart %s", r.Namespace, r.Name, r.Revision, r.Chart)
	if r.AppVersion != "" {
		s += ", app " + r.AppVersion
	}
	s += fmt.Sprintf("): Helm status %s", r.HelmStatus)
	if r.Last != r.Revision {
		s += fmt.Sprintf(" (last revision %d)", r.Last)
	}
	if r.ApplyMethod == plan.ApplyMethodSSA {
		s += ", applied server-side"
	}
	return s
}

// nextText says what the next upgrade does to an object that is not in
// sync.
func nextText(o *plan.ObjectStatus) string {
	switch {
	case o.State == plan.StateExtra:
		return "not touched (not in the manifest)"
	case o.State == plan.StateMissing && o.Next == string(plan.ActionCreate):
		return "re-created"
	case o.Next == string(plan.ActionNoop):
		return "left as it is (noop)"
	case o.Next == string(plan.ClassInvalid):
		return "fails (invalid; see why)"
	case o.Next == string(plan.ClassRecreateRequired):
		return "reverted by a recreate (recreate-required: destructive, to acknowledge)"
	}
	return "reverted (" + o.Next + ")"
}

// fieldDriftText is one drifted field: "path: stored → live (manager
// kubectl-edit, Update, 2026-12-03T10:00:00Z)".
func fieldDriftText(d plan.FieldDrift) string {
	s := fmt.Sprintf("%s: %s → %s", d.Path, orNone(d.Stored), orNone(d.Live))
	if d.Manager != "" {
		by := "manager " + d.Manager
		if d.Operation != "" {
			by += ", " + d.Operation
		}
		if !d.Time.IsZero() {
			by += ", " + d.Time.UTC().Format(time.RFC3339)
		}
		s += " (" + by + ")"
	}
	if d.Reverted {
		s += "; the next upgrade reverts it"
	} else {
		s += "; not reverted by the next upgrade"
	}
	return s
}

func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

func writeStatusText(w io.Writer, st *plan.Status) error {
	var b strings.Builder
	for i := range st.Releases {
		r := &st.Releases[i]
		b.WriteString(releaseHeader(r) + "\n")
		for _, h := range r.Health {
			b.WriteString("  ! " + h + "\n")
		}
		for j := range r.Objects {
			o := &r.Objects[j]
			if o.State == plan.StateInSync {
				continue
			}
			fmt.Fprintf(&b, "  %-8s %s: next upgrade: %s\n", o.State, o.ID, nextText(o))
			for _, d := range o.Drift {
				b.WriteString("      " + fieldDriftText(d) + "\n")
			}
			if o.State != plan.StateExtra {
				for _, rs := range o.Reasons {
					b.WriteString("      why: " + reasonText(rs) + "\n")
				}
			}
			if o.Rollout != nil {
				b.WriteString("      rollout: " + rolloutText(o.Rollout) + "\n")
			}
			for _, n := range o.Notes {
				b.WriteString("      note: " + n + "\n")
			}
		}
		for _, n := range r.Notes {
			b.WriteString("  note: " + n + "\n")
		}
		s := r.Summary()
		fmt.Fprintf(&b, "  %d in sync, %d drifted, %d missing, %d extra\n\n", s.InSync, s.Drifted, s.Missing, s.Extra)
	}
	b.WriteString(StatusLine(st) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// The JSON document of status, safe-upgrade/v1 kind Status. These types are
// its only definition (docs/json-schema.md#status-document); field order is
// output order.
type jsonStatus struct {
	APIVersion    string              `json:"apiVersion"`
	Kind          string              `json:"kind"`
	Summary       jsonStatusSummary   `json:"summary"`
	Releases      []jsonReleaseStatus `json:"releases"`
	ServerVersion string              `json:"serverVersion,omitempty"`
}

type jsonStatusSummary struct {
	Releases int `json:"releases"`
	jsonObjectCounts
}

// jsonObjectCounts counts objects by state.
type jsonObjectCounts struct {
	InSync  int `json:"inSync"`
	Drifted int `json:"drifted"`
	Missing int `json:"missing"`
	Extra   int `json:"extra"`
}

type jsonReleaseStatus struct {
	Name         string             `json:"name"`
	Namespace    string             `json:"namespace"`
	Revision     int                `json:"revision"`
	LastRevision int                `json:"lastRevision"`
	HelmStatus   string             `json:"helmStatus"`
	Chart        string             `json:"chart"`
	AppVersion   string             `json:"appVersion,omitempty"`
	ApplyMethod  string             `json:"applyMethod"`
	Updated      string             `json:"updated,omitempty"`
	Summary      jsonObjectCounts   `json:"summary"`
	Health       []string           `json:"health,omitempty"`
	Objects      []jsonObjectStatus `json:"objects"`
	Notes        []string           `json:"notes,omitempty"`
}

type jsonObjectStatus struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Namespace  string           `json:"namespace,omitempty"`
	Name       string           `json:"name"`
	State      string           `json:"state"`
	Next       string           `json:"next,omitempty"`
	Drift      []jsonFieldDrift `json:"drift,omitempty"`
	Reasons    []jsonReason     `json:"reasons,omitempty"`
	Rollout    *jsonRollout     `json:"rollout,omitempty"`
	Notes      []string         `json:"notes,omitempty"`
}

type jsonFieldDrift struct {
	Path      string `json:"path"`
	Stored    string `json:"stored"`
	Live      string `json:"live"`
	Manager   string `json:"manager,omitempty"`
	Operation string `json:"operation,omitempty"`
	Time      string `json:"time,omitempty"`
	Reverted  bool   `json:"reverted"`
}

func objectCounts(s plan.StatusSummary) jsonObjectCounts {
	return jsonObjectCounts{InSync: s.InSync, Drifted: s.Drifted, Missing: s.Missing, Extra: s.Extra}
}

// jsonTime is t in RFC 3339, UTC; "" (left out) for the zero time.
func jsonTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func writeStatusJSON(w io.Writer, st *plan.Status) error {
	doc := jsonStatus{APIVersion: plan.APIVersion, Kind: StatusKind, Summary: jsonStatusSummary{Releases: len(st.Releases), jsonObjectCounts: objectCounts(st.Summary())},
		Releases: []jsonReleaseStatus{}, ServerVersion: st.ServerVersion}
	for i := range st.Releases {
		r := &st.Releases[i]
		jr := jsonReleaseStatus{Name: r.Name, Namespace: r.Namespace, Revision: r.Revision, LastRevision: r.Last,
			HelmStatus: r.HelmStatus, Chart: r.Chart, AppVersion: r.AppVersion, ApplyMethod: r.ApplyMethod,
			Updated: jsonTime(r.Updated), Summary: objectCounts(r.Summary()), Health: r.Health, Objects: []jsonObjectStatus{}, Notes: r.Notes}
		for j := range r.Objects {
			o := &r.Objects[j]
			jo := jsonObjectStatus{APIVersion: o.APIVersion, Kind: o.ID.Kind, Namespace: o.ID.Namespace, Name: o.ID.Name,
				State: string(o.State), Next: o.Next, Notes: o.Notes}
			for _, d := range o.Drift {
				jo.Drift = append(jo.Drift, jsonFieldDrift{Path: d.Path, Stored: d.Stored, Live: d.Live, Manager: d.Manager,
					Operation: d.Operation, Time: jsonTime(d.Time), Reverted: d.Reverted})
			}
			for _, rs := range o.Reasons {
				jo.Reasons = append(jo.Reasons, jsonReasonOf(rs))
			}
			jo.Rollout = toJSONRollout(o.Rollout)
			jr.Objects = append(jr.Objects, jo)
		}
		doc.Releases = append(doc.Releases, jr)
	}
	b, err := encodeJSON(doc, "")
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func writeStatusMarkdown(w io.Writer, st *plan.Status) error {
	var b strings.Builder
	b.WriteString("## What is deployed\n\n" + mdText(StatusLine(st)) + "\n")
	for i := range st.Releases {
		r := &st.Releases[i]
		b.WriteString("\n### " + mdText(releaseHeader(r)) + "\n\n")
		for _, h := range r.Health {
			b.WriteString("- :warning: " + mdText(h) + "\n")
		}
		if len(r.Health) > 0 {
			b.WriteString("\n")
		}
		s := r.Summary()
		fmt.Fprintf(&b, "%d in sync, %d drifted, %d missing, %d extra\n", s.InSync, s.Drifted, s.Missing, s.Extra)
		if s.Drifted+s.Missing+s.Extra == 0 {
			continue
		}
		b.WriteString("\n| object | state | next upgrade | details |\n|---|---|---|---|\n")
		for j := range r.Objects {
			o := &r.Objects[j]
			if o.State == plan.StateInSync {
				continue
			}
			var details []string
			for _, d := range o.Drift {
				details = append(details, mdCode(fieldDriftText(d), true))
			}
			details = append(details, mdTexts(o.Notes)...)
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", mdCode(o.ID.String(), true), o.State, mdText(nextText(o)), strings.Join(details, "<br>"))
		}
		for _, n := range r.Notes {
			b.WriteString("\n> " + mdText(n) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdTexts(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = mdText(s)
	}
	return out
}

// Status SARIF rules: one per state that is not in sync.
const (
	RuleDrifted = "drifted"
	RuleMissing = "missing"
	RuleExtra   = "extra"
	// RuleUnreadable: a stored release record cannot be read.
	RuleUnreadable = "unreadable"
)

var statusRules = []struct{ id, name, short, full, level string }{
	{RuleDrifted, "Drifted", "A live object differs from its release's stored manifest",
		"A field the chart sets was changed in the cluster (kubectl edit, a controller): the next upgrade of the same chart and values reverts it.", "warning"},
	{RuleMissing, "Missing", "An object of the release is missing from the cluster",
		"An object of the release's stored manifest was deleted: the next upgrade re-creates it.", "warning"},
	{RuleExtra, "Extra", "An object claims the release but is not in its manifest",
		"The object carries the release's ownership annotations or labels but is not in its stored manifest: Helm neither upgrades nor deletes it.", "note"},
	{RuleUnreadable, "Unreadable", "A release record cannot be read",
		"A revision's Helm record (a Secret or ConfigMap anyone who may write them in the namespace can write) is over the 256 MiB bound, not JSON, or of a wrong type: what is deployed is not known.", "error"},
}

// writeStatusSARIF writes one result per object not in sync, located on
// releases/NAMESPACE/NAME (a release has no file of its own).
func writeStatusSARIF(w io.Writer, st *plan.Status) error {
	run := sarif.NewRunWithInformationURI("helm-safe-upgrade", informationURI)
	levels := map[string]string{}
	for _, r := range statusRules {
		levels[r.id] = r.level
		run.AddRule(r.id).WithName(r.name).
			WithShortDescription(sarif.NewMultiformatMessageString().WithText(r.short)).
			WithFullDescription(sarif.NewMultiformatMessageString().WithText(r.full)).
			WithDefaultConfiguration(sarif.NewReportingConfiguration().WithLevel(r.level)).
			WithHelpURI(informationURI + "#what-is-deployed")
	}
	for i := range st.Releases {
		r := &st.Releases[i]
		uri := "releases/" + r.Namespace + "/" + r.Name
		if r.Unreadable {
			run.CreateResultForRule(RuleUnreadable).
				WithLevel(levels[RuleUnreadable]).
				WithMessage(sarif.NewTextMessage(fmt.Sprintf("release %s/%s: %s", r.Namespace, r.Name, strings.Join(r.Health, "\n")))).
				WithPartialFingerprints(map[string]string{"objectRule/v1": r.Namespace + "/" + r.Name + "/" + RuleUnreadable}).
				AddLocation(sarif.NewLocationWithPhysicalLocation(sarif.NewPhysicalLocation().
					WithArtifactLocation(sarif.NewSimpleArtifactLocation(uri)).
					WithRegion(sarif.NewRegion().WithStartLine(1))))
		}
		for j := range r.Objects {
			o := &r.Objects[j]
			if o.State == plan.StateInSync {
				continue
			}
			rule := string(o.State)
			msg := fmt.Sprintf("%s of release %s/%s is %s: next upgrade: %s", o.ID, r.Namespace, r.Name, o.State, nextText(o))
			for _, d := range o.Drift {
				msg += "\n" + fieldDriftText(d)
			}
			for _, n := range o.Notes {
				msg += "\n" + n
			}
			run.CreateResultForRule(rule).
				WithLevel(levels[rule]).
				WithMessage(sarif.NewTextMessage(msg)).
				WithPartialFingerprints(map[string]string{"objectRule/v1": r.Namespace + "/" + r.Name + "/" + o.ID.String() + "/" + rule}).
				AddLocation(sarif.NewLocationWithPhysicalLocation(sarif.NewPhysicalLocation().
					WithArtifactLocation(sarif.NewSimpleArtifactLocation(uri)).
					WithRegion(sarif.NewRegion().WithStartLine(1))))
		}
	}
	return writeSARIFRun(w, run)
}
