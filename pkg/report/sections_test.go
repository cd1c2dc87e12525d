package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestWriteSections: each format of a report of several plans — one
// section per plan with its object, file and line; a section without a
// plan carries its note; SARIF results point at each section's change.
func TestWriteSections(t *testing.T) {
	sections := []Section{
		{Title: "HelmRelease apps/shop", File: "apps/shop.yaml", Line: 11, Plan: fixturePlan()},
		{Title: "Application argocd/web_[x]", File: "argocd/web.yaml", Line: 3, Note: "removed from the head"},
	}
	for _, tc := range []struct {
		format string
		check  func(t *testing.T, out string)
	}{
		{FormatText, func(t *testing.T, out string) {
			for _, want := range []string{"=== HelmRelease apps/shop (apps/shop.yaml:11) ===", "recreate-required", "=== Application argocd/web_[x] (argocd/web.yaml:3) ===\nremoved from the head"} {
				if !strings.Contains(out, want) {
					t.Errorf("lacks %q:\n%s", want, out)
				}
			}
		}},
		{FormatMarkdown, func(t *testing.T, out string) {
			for _, want := range []string{"# HelmRelease apps/shop\n\n`apps/shop.yaml:11`", "# Application argocd/web\\_\\[x\\]"} {
				if !strings.Contains(out, want) {
					t.Errorf("lacks %q:\n%s", want, out)
				}
			}
		}},
		{FormatJSON, func(t *testing.T, out string) {
			var doc struct {
				Releases []struct {
					Object, File, Note string
					Line               int
					Plan               map[string]interface{}
				}
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatal(err)
			}
			if len(doc.Releases) != 2 || doc.Releases[0].Line != 11 || doc.Releases[0].Plan["apiVersion"] == nil || doc.Releases[1].Plan != nil || doc.Releases[1].Note == "" {
				t.Errorf("releases %+v", doc.Releases)
			}
		}},
		{FormatSARIF, func(t *testing.T, out string) {
			var log struct {
				Runs []struct {
					Results []struct {
						Locations []struct {
							PhysicalLocation struct {
								ArtifactLocation struct{ URI string }    `json:"artifactLocation"`
								Region           struct{ StartLine int } `json:"region"`
							} `json:"physicalLocation"`
						}
					}
				}
			}
			if err := json.Unmarshal([]byte(out), &log); err != nil || len(log.Runs) != 1 || len(log.Runs[0].Results) == 0 {
				t.Fatalf("%v\n%s", err, out)
			}
			for _, r := range log.Runs[0].Results {
				if l := r.Locations[0].PhysicalLocation; l.ArtifactLocation.URI != "apps/shop.yaml" || l.Region.StartLine != 11 {
					t.Errorf("result at %s:%d, want apps/shop.yaml:11", l.ArtifactLocation.URI, l.Region.StartLine)
				}
			}
		}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := (Request{Output: tc.format}).WriteSections(&out, &errOut, sections, false, false); err != nil {
				t.Fatal(err)
			}
			tc.check(t, out.String())
		})
	}
}
