package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// Location is where SARIF results point when a plan comes from a change
// outside the chart (a GitOps object's changed line): every result of the
// plan points there.
type Location struct {
	URI  string // slash-separated, relative to the repository root when the tool runs there
	Line int
}

// Section is one plan of a report of several (a GitOps pull request's):
// a title (the object), where its change is, and the plan, or a note
// when nothing was planned (an object the head removes).
type Section struct {
	Title string
	File  string
	Line  int
	Plan  *plan.Plan
	Note  string
}

// WriteSections writes sections as f asks, one report per plan: text and
// Markdown under a heading per section, JSON as one document
// {"releases": [{"object", "file", "line", "plan" or "note"}]}, SARIF as one
// run whose results point at each section's file and line. In GitHub
// Actions, the annotations of every plan go to errOut.
func (f Request) WriteSections(out, errOut io.Writer, sections []Section, color bool, hideSecrets bool) error {
	opts := f.Options(color)
	opts.HideSecrets = hideSecrets
	switch f.Output {
	case FormatJSON:
		return writeSectionsJSON(out, sections, opts)
	case FormatSARIF:
		return writeSectionsSARIF(out, sections, opts)
	}
	if len(sections) == 0 {
		fmt.Fprintln(out, "No HelmRelease or Application renders differently between the base and the head.")
	}
	if f.Output == FormatMarkdown && len(sections) > 0 {
		// A GitHub comment holds 65536 characters: the plans share them.
		opts.MaxMarkdownBytes = DefaultMaxMarkdownBytes / len(sections)
	}
	for i, s := range sections {
		if i > 0 {
			fmt.Fprintln(out)
		}
		if f.Output == FormatMarkdown {
			fmt.Fprintf(out, "# %s\n\n`%s:%d`\n\n", mdEscape(s.Title), filepath.ToSlash(s.File), s.Line)
		} else {
			fmt.Fprintf(out, "=== %s (%s:%d) ===\n", s.Title, filepath.ToSlash(s.File), s.Line)
		}
		if s.Plan == nil {
			fmt.Fprintln(out, s.Note)
			continue
		}
		if err := Write(out, s.Plan, opts); err != nil {
			return err
		}
		if f.GitHubActions {
			if err := GitHubAnnotations(errOut, s.Plan); err != nil {
				return err
			}
		}
	}
	return nil
}

// mdEscape keeps a title from being read as Markdown.
func mdEscape(s string) string {
	var b bytes.Buffer
	for _, r := range s {
		switch r {
		case '\\', '`', '*', '_', '[', ']', '<', '>', '#', '|':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func writeSectionsJSON(out io.Writer, sections []Section, opts Options) error {
	type entry struct {
		Object string          `json:"object"`
		File   string          `json:"file"`
		Line   int             `json:"line"`
		Plan   json.RawMessage `json:"plan,omitempty"`
		Note   string          `json:"note,omitempty"`
	}
	doc := struct {
		Releases []entry `json:"releases"`
	}{Releases: []entry{}}
	opts.Format = FormatJSON
	for _, s := range sections {
		e := entry{Object: s.Title, File: filepath.ToSlash(s.File), Line: s.Line, Note: s.Note}
		if s.Plan != nil {
			var b bytes.Buffer
			if err := Write(&b, s.Plan, opts); err != nil {
				return err
			}
			e.Plan = json.RawMessage(bytes.TrimSpace(b.Bytes()))
		}
		doc.Releases = append(doc.Releases, e)
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// writeSectionsSARIF writes one SARIF log: the first plan's run, with the
// results of every plan, each located at its section's change.
func writeSectionsSARIF(out io.Writer, sections []Section, opts Options) error {
	opts.Format = FormatSARIF
	var merged map[string]interface{}
	var results []interface{}
	empty := &plan.Plan{}
	for _, s := range sections {
		p := s.Plan
		if p == nil {
			p = empty
		}
		o := opts
		o.Location = &Location{URI: filepath.ToSlash(s.File), Line: s.Line}
		var b bytes.Buffer
		if err := Write(&b, p, o); err != nil {
			return err
		}
		var doc map[string]interface{}
		if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
			return err
		}
		runs, _ := doc["runs"].([]interface{})
		if len(runs) == 0 {
			continue
		}
		run, _ := runs[0].(map[string]interface{})
		if rs, ok := run["results"].([]interface{}); ok {
			results = append(results, rs...)
		}
		if merged == nil {
			merged = doc
		}
	}
	if merged == nil {
		return Write(out, empty, opts)
	}
	run := merged["runs"].([]interface{})[0].(map[string]interface{})
	run["results"] = append([]interface{}{}, results...)
	data, err := json.MarshalIndent(merged, "", "  ")
	if err != nil {
		return err
	}
	_, err = out.Write(append(data, '\n'))
	return err
}
