package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// sarifPlan is the fixture plan with the templates its objects come from;
// the deleted claim's template is gone from the new chart.
func sarifPlan() *plan.Plan {
	p := fixturePlan()
	for i := range p.Changes {
		switch p.Changes[i].ID.Name {
		case "postgres":
			p.Changes[i].Source = "shop/templates/postgres.yaml"
		case "worker":
			p.Changes[i].Source = "shop/templates/worker.yaml"
		case "uploads":
			p.Changes[i].Source = "shop/templates/uploads.yaml"
		}
	}
	return p
}

func TestSARIFGolden(t *testing.T) {
	out := write(t, sarifPlan(), Options{Format: FormatSARIF, ChartDir: "testdata/charts/shop", ToolVersion: "v1.2.3"})
	assertGolden(t, "plan.sarif", []byte(out))
}

// TestSARIFContract checks what GitHub code scanning requires of a SARIF
// 2.1.0 upload: the version and schema, a tool driver with its rules, and
// results each with a ruleId among them, a level, a message and a physical
// location with a line; and that the document is valid against the schema.
func TestSARIFContract(t *testing.T) {
	out := write(t, sarifPlan(), Options{Format: FormatSARIF, ChartDir: "testdata/charts/shop"})
	rep, err := sarif.FromString(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Validate(); err != nil {
		t.Fatalf("not valid SARIF 2.1.0: %v", err)
	}
	var doc struct {
		Schema  string `json:"$schema"`
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string `json:"name"`
					Rules []struct {
						ID               string                `json:"id"`
						ShortDescription struct{ Text string } `json:"shortDescription"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string                `json:"ruleId"`
				RuleIndex int                   `json:"ruleIndex"`
				Level     string                `json:"level"`
				Message   struct{ Text string } `json:"message"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string }    `json:"artifactLocation"`
						Region           struct{ StartLine int } `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
				PartialFingerprints map[string]string `json:"partialFingerprints"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Version != "2.1.0" || !strings.Contains(doc.Schema, "sarif-2.1") || len(doc.Runs) != 1 {
		t.Fatalf("version %q schema %q runs %d", doc.Version, doc.Schema, len(doc.Runs))
	}
	run := doc.Runs[0]
	if run.Tool.Driver.Name != "helm-safe-upgrade" || len(run.Tool.Driver.Rules) == 0 {
		t.Fatalf("driver = %+v", run.Tool.Driver)
	}
	rules := map[string]int{}
	for i, r := range run.Tool.Driver.Rules {
		if r.ID == "" || r.ShortDescription.Text == "" {
			t.Errorf("rule %d incomplete: %+v", i, r)
		}
		rules[r.ID] = i
	}
	want := map[string]string{ // object → rule, level, location
		"StatefulSet.apps/shop/postgres":     RuleRecreateRequired + " error testdata/charts/shop/templates/postgres.yaml:12",
		"Deployment.apps/shop/worker":        RuleInvalid + " error testdata/charts/shop/templates/worker.yaml:2",
		"PersistentVolumeClaim/shop/uploads": RuleDestructiveDelete + " warning testdata/charts/shop/Chart.yaml:1",
	}
	if len(run.Results) != len(want) {
		t.Fatalf("%d results, want one per destructive change (%d)", len(run.Results), len(want))
	}
	for _, r := range run.Results {
		idx, ok := rules[r.RuleID]
		if !ok || idx != r.RuleIndex {
			t.Errorf("result rule %q index %d not among the driver's rules %v", r.RuleID, r.RuleIndex, rules)
		}
		if r.Message.Text == "" || len(r.Locations) != 1 || r.Locations[0].PhysicalLocation.Region.StartLine < 1 {
			t.Errorf("result incomplete: %+v", r)
			continue
		}
		obj, _, _ := strings.Cut(r.Message.Text, " ")
		loc := r.Locations[0].PhysicalLocation
		got := r.RuleID + " " + r.Level + " " + loc.ArtifactLocation.URI + ":" + itoa(loc.Region.StartLine)
		if want[obj] != got {
			t.Errorf("%s: got %q, want %q", obj, got, want[obj])
		}
		if r.PartialFingerprints["objectRule/v1"] == "" {
			t.Errorf("%s: no partial fingerprint", obj)
		}
	}
}

func TestSARIFWithoutLocalChart(t *testing.T) {
	out := write(t, sarifPlan(), Options{Format: FormatSARIF})
	if strings.Contains(out, "templates/") || !strings.Contains(out, `"uri": "Chart.yaml"`) {
		t.Fatalf("results not on Chart.yaml:\n%s", out)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
