package upgrade

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

var (
	here    = ClusterIdentity{Server: "https://127.0.0.1:6443", KubeSystemUID: "uid-1", Context: "dev"}
	planned = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
)

// savedFixture returns a connected-looking Config (no cluster is reached)
// and a plan that creates one ConfigMap and changes another.
func savedFixture(t *testing.T) (*Config, *Planned) {
	t.Helper()
	c := &Config{Out: io.Discard, Logf: t.Logf, Now: func() time.Time { return planned }, Masker: redact.NewMasker(),
		Helm: &action.Configuration{}, Identity: here}
	ch := &chart.Chart{Metadata: &chart.Metadata{Name: "app", Version: "1.0.0"}}
	next := &release.Release{Name: "app", Namespace: "prod", Version: 2, Chart: ch,
		Manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: a}\n",
		Hooks:    []*release.Hook{{Name: "migrate", Kind: "Job", Manifest: "kind: Job", Events: []release.HookEvent{release.HookPreUpgrade}}},
		Info:     &release.Info{Notes: "hello"}}
	last := &release.Release{Name: "app", Namespace: "prod", Version: 1}
	live := &unstructured.Unstructured{Object: map[string]interface{}{"data": map[string]interface{}{"mode": "x"}}}
	p := &plan.Plan{Release: plan.Release{Name: "app", Namespace: "prod", Revision: 2}, Changes: []plan.Change{
		{ID: manifest.ObjectID{Kind: "ConfigMap", Namespace: "prod", Name: "settings"}, Action: plan.ActionUpdate, LiveResourceVersion: "7", Before: live},
		{ID: manifest.ObjectID{Kind: "ConfigMap", Namespace: "prod", Name: "new"}, Action: plan.ActionCreate},
	}}
	return c, &Planned{Plan: p, Rendered: &render.Result{Next: next, Last: last, Previous: last, Chart: ch},
		ChartRef: "./app", Render: RenderOptions{Namespace: "prod"}}
}

func save(t *testing.T) (string, *Config, *Planned) {
	t.Helper()
	c, pl := savedFixture(t)
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := c.SavePlan(context.Background(), path, pl); err != nil {
		t.Fatal(err)
	}
	return path, c, pl
}

func TestSavedPlanRoundTrip(t *testing.T) {
	path, c, pl := save(t)
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("saved plan %v, mode %v; want 0600", err, info.Mode())
	}
	s, err := LoadPlan(path, "app", "prod")
	if err != nil {
		t.Fatal(err)
	}
	if s.Manifest != pl.Rendered.Next.Manifest || len(s.Hooks) != 1 || s.Cluster != here || !s.Created.Equal(planned) {
		t.Fatalf("loaded %+v", s)
	}
	if err := s.check(here, applyFlags(pl.Render, pl.Apply), c.Now(), time.Hour); err != nil {
		t.Fatalf("the same cluster, flags and time: %v", err)
	}
	if _, err := LoadPlan(path, "other", "prod"); err == nil || !strings.Contains(err.Error(), "made for release prod/app, not prod/other") {
		t.Fatalf("another release: %v", err)
	}
}

// TestSavedPlanRefusesEdits: whatever is changed in the file, LoadPlan
// refuses it with exit-1 wording that names why; nothing panics.
func TestSavedPlanRefusesEdits(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(doc map[string]interface{}) // on the decoded JSON
		raw  func(s string) string            // or on the text
		want string
	}{
		{name: "a ConfigMap value edited", raw: func(s string) string { return strings.Replace(s, "mode: a", "mode: b", 1) },
			want: "changed after it was saved"},
		{name: "a hook appended", edit: func(d map[string]interface{}) {
			d["hooks"] = append(d["hooks"].([]interface{}), map[string]interface{}{"name": "evil", "kind": "Job", "manifest": "kind: Job"})
		}, want: "changed after it was saved"},
		{name: "hooks: [null]", edit: func(d map[string]interface{}) { d["hooks"] = []interface{}{nil} }, want: "field hooks[0] is null"},
		{name: "hooks: null", edit: func(d map[string]interface{}) { d["hooks"] = nil }, want: "field hooks is null"},
		{name: "unknown field", edit: func(d map[string]interface{}) { d["extra"] = true }, want: `unknown field "extra"`},
		{name: "wrong type", edit: func(d map[string]interface{}) {
			d["release"].(map[string]interface{})["lastRevision"] = "1"
		}, want: "field release.lastRevision: string where int is expected"},
		{name: "seal removed", edit: func(d map[string]interface{}) { d["seal"] = "" }, want: "changed after it was saved"},
		{name: "not JSON", raw: func(string) string { return "{" }, want: "not JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, _, _ := save(t)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if tc.raw != nil {
				data = []byte(tc.raw(string(data)))
			} else {
				var doc map[string]interface{}
				if err := json.Unmarshal(data, &doc); err != nil {
					t.Fatal(err)
				}
				tc.edit(doc)
				if data, err = json.Marshal(doc); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = LoadPlan(path, "app", "prod")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v, want one naming %s and saying %q", err, path, tc.want)
			}
		})
	}
}

func TestSavedPlanCheck(t *testing.T) {
	path, c, pl := save(t)
	s, err := LoadPlan(path, "app", "prod")
	if err != nil {
		t.Fatal(err)
	}
	noHooks := pl.Render
	noHooks.DisableHooks = true
	hideNotes := pl.Render
	hideNotes.HideNotes = true // what is shown, not what is applied
	for _, tc := range []struct {
		name   string
		id     ClusterIdentity
		flags  map[string]interface{}
		now    time.Time
		maxAge time.Duration
		want   string
	}{
		{name: "another cluster", id: ClusterIdentity{Server: here.Server, KubeSystemUID: "uid-2", Context: "dev"},
			flags: applyFlags(pl.Render, pl.Apply), now: c.Now(), want: "made for another cluster"},
		{name: "another context", id: ClusterIdentity{Server: here.Server, KubeSystemUID: here.KubeSystemUID, Context: "prod"},
			flags: applyFlags(pl.Render, pl.Apply), now: c.Now(), want: `context "dev"`},
		{name: "--no-hooks at apply only", id: here, flags: applyFlags(noHooks, pl.Apply), now: c.Now(),
			want: "made with DisableHooks=false, this run has true"},
		{name: "--force at apply only", id: here, flags: applyFlags(pl.Render, ApplyRequest{Force: true}), now: c.Now(),
			want: "made with Force=false, this run has true"},
		{name: "too old", id: here, flags: applyFlags(pl.Render, pl.Apply), now: c.Now().Add(2 * time.Hour), maxAge: time.Hour,
			want: "2h0m0s old, more than --plan-max-age 1h0m0s"},
		{name: "--hide-notes at apply only", id: here, flags: applyFlags(hideNotes, pl.Apply), now: c.Now()},
		{name: "old but no limit", id: here, flags: applyFlags(pl.Render, pl.Apply), now: c.Now().Add(2 * time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := s.check(tc.id, tc.flags, tc.now, tc.maxAge)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestSavedPlanPinsCreates: an object the plan creates that appeared since
// makes the plan stale, as a changed object does.
func TestSavedPlanPinsCreates(t *testing.T) {
	path, _, pl := save(t)
	s, err := LoadPlan(path, "app", "prod")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.unmoved(pl.Plan); err != nil {
		t.Fatalf("nothing moved: %v", err)
	}
	now := *pl.Plan
	now.Changes = append([]plan.Change(nil), pl.Plan.Changes...)
	now.Changes[1].Action, now.Changes[1].LiveResourceVersion = plan.ActionUpdate, "9"
	now.Changes[1].Before = &unstructured.Unstructured{Object: map[string]interface{}{"data": map[string]interface{}{}}}
	if err := s.unmoved(&now); err == nil || !strings.Contains(err.Error(), "ConfigMap/prod/new, which the plan creates, appeared") {
		t.Fatalf("error %v, want the created ConfigMap named", err)
	}
}
