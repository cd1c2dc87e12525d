package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

func keys(m map[string]interface{}) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func hasKeys(t *testing.T, what string, m map[string]interface{}, want ...string) {
	t.Helper()
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Errorf("%s: no key %q (keys: %v)", what, k, keys(m))
		}
	}
}

// TestJSONContract checks the keys GUIDE §3 promises.
func TestJSONContract(t *testing.T) {
	out := write(t, fixturePlan(), Options{Format: FormatJSON})
	if !strings.HasSuffix(out, "}\n") || !strings.HasPrefix(out, "{\n  \"apiVersion\"") {
		t.Errorf("want 2-space indented JSON with a trailing newline, got %.40q…%q", out, out[len(out)-3:])
	}
	var doc map[string]interface{}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	hasKeys(t, "plan", doc, "apiVersion", "release", "summary", "changes")
	if doc["apiVersion"] != "safe-upgrade/v1" {
		t.Errorf("apiVersion = %v", doc["apiVersion"])
	}
	hasKeys(t, "release", doc["release"].(map[string]interface{}), "name", "namespace", "revision", "chart")
	summary := doc["summary"].(map[string]interface{})
	hasKeys(t, "summary", summary, "create", "delete", "noop", "inPlace", "rolling", "recreate", "destructive", "blocked")
	for k, want := range map[string]float64{
		"create": 1, "delete": 1, "noop": 1, "inPlace": 2, "rolling": 1, "recreate": 1, "invalid": 1,
		"destructive": 3, "blocked": 2,
	} {
		if summary[k] != want {
			t.Errorf("summary.%s = %v, want %v", k, summary[k], want)
		}
	}

	changes := doc["changes"].([]interface{})
	if len(changes) != len(fixturePlan().Changes) {
		t.Fatalf("%d changes, want %d (noops included)", len(changes), len(fixturePlan().Changes))
	}
	actions := map[string]bool{"create": true, "delete": true, "update": true, "noop": true}
	classes := map[string]bool{"in-place": true, "rolling": true, "recreate-required": true, "invalid": true}
	for _, raw := range changes {
		c := raw.(map[string]interface{})
		what := "change " + c["kind"].(string) + "/" + c["name"].(string)
		hasKeys(t, what, c, "apiVersion", "kind", "namespace", "name", "action", "destructive",
			"acknowledged", "fingerprint", "reasons", "diff")
		action := c["action"].(string)
		if !actions[action] {
			t.Errorf("%s: action %q", what, action)
		}
		class, hasClass := c["class"]
		if hasClass != (action == "update") {
			t.Errorf("%s: action %s with class %v: class is for updates only", what, action, class)
		}
		if hasClass && !classes[class.(string)] {
			t.Errorf("%s: class %q", what, class)
		}
		for _, r := range c["reasons"].([]interface{}) {
			reason := r.(map[string]interface{})
			hasKeys(t, what+" reason", reason, "path", "message", "source")
			if s := reason["source"]; s != "server" && s != "derived" && s != "catalogue" && s != "helm" {
				t.Errorf("%s: reason source %q", what, s)
			}
		}
		if action == "noop" && c["diff"] != "" {
			t.Errorf("%s: noop with a diff", what)
		}
	}

	web := findChange(t, changes, "Deployment", "web")
	if !strings.HasPrefix(web["diff"].(string), "--- live/Deployment/shop/web\n+++ predicted/Deployment/shop/web\n@@") {
		t.Errorf("Deployment/web diff: %q", web["diff"])
	}
	hasKeys(t, "Deployment/web", web, "rollout", "drift")
	if findChange(t, changes, "StatefulSet", "postgres")["fingerprint"] != "9f2c41d7e0ab" {
		t.Error("StatefulSet/postgres: fingerprint lost")
	}
}

func findChange(t *testing.T, changes []interface{}, kind, name string) map[string]interface{} {
	t.Helper()
	for _, raw := range changes {
		c := raw.(map[string]interface{})
		if c["kind"] == kind && c["name"] == name {
			return c
		}
	}
	t.Fatalf("no change %s/%s", kind, name)
	return nil
}

// TestJSONEmptyLists: lists the contract names are [] rather than null.
func TestJSONEmptyLists(t *testing.T) {
	p := &plan.Plan{Release: plan.Release{Name: "r", Namespace: "n", Revision: 1}}
	p.Changes = []plan.Change{{ID: id("", "ConfigMap", "c"), APIVersion: "v1", Action: plan.ActionNoop}}
	out := write(t, p, Options{Format: FormatJSON})
	if strings.Contains(out, "null") {
		t.Errorf("output has null:\n%s", out)
	}
	out = write(t, &plan.Plan{}, Options{Format: FormatJSON})
	if !strings.Contains(out, `"changes": []`) {
		t.Errorf("empty plan: want \"changes\": [], got:\n%s", out)
	}
}

// failAfter accepts limit bytes, then fails every write.
type failAfter struct {
	limit, n int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n+len(p) > f.limit {
		k := f.limit - f.n
		f.n = f.limit
		return k, errors.New("write /dev/stdout: broken pipe")
	}
	f.n += len(p)
	return len(p), nil
}

// TestJSONIncompleteSaysSo: a JSON report that fails part-way through
// (streamed, it is written a batch at a time) says the document on the
// output is incomplete; one that fails before writing anything does not.
func TestJSONIncompleteSaysSo(t *testing.T) {
	p := &plan.Plan{Release: plan.Release{Name: "r", Namespace: "n", Revision: 1}}
	for i := range 2000 {
		p.Changes = append(p.Changes, plan.Change{ID: id("", "ConfigMap", fmt.Sprintf("c%04d", i)), APIVersion: "v1", Action: plan.ActionNoop})
	}
	for _, tt := range []struct {
		limit      int
		incomplete bool
	}{{limit: 0}, {limit: 100 << 10, incomplete: true}} {
		err := Write(&failAfter{limit: tt.limit}, p, Options{Format: FormatJSON})
		if err == nil {
			t.Fatalf("limit %d: no error", tt.limit)
		}
		if got := strings.Contains(err.Error(), "incomplete"); got != tt.incomplete {
			t.Errorf("limit %d: %v; want it to say the document is incomplete: %v", tt.limit, err, tt.incomplete)
		}
		if !strings.Contains(err.Error(), "broken pipe") {
			t.Errorf("limit %d: %v does not carry the write error", tt.limit, err)
		}
	}
}
