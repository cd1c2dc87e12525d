package savedplan

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

var (
	here    = ClusterIdentity{Server: "https://127.0.0.1:6443", KubeSystemUID: "uid-1", Context: "dev"}
	planned = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
)

// fixture returns a plan that creates one ConfigMap and changes another,
// the render options it was made with, and the saved plan of it (as the
// Plan action builds it).
func fixture(t *testing.T) (*plan.Plan, render.Options, *Plan) {
	t.Helper()
	ch := &chart.Chart{Metadata: &chart.Metadata{Name: "app", Version: "1.0.0"}}
	live := &unstructured.Unstructured{Object: map[string]interface{}{"data": map[string]interface{}{"mode": "x"}}}
	p := &plan.Plan{Release: plan.Release{Name: "app", Namespace: "prod", Revision: 2}, Changes: []plan.Change{
		{ID: manifest.ObjectID{Kind: "ConfigMap", Namespace: "prod", Name: "settings"}, Action: plan.ActionUpdate, LiveResourceVersion: "7", Before: live},
		{ID: manifest.ObjectID{Kind: "ConfigMap", Namespace: "prod", Name: "new"}, Action: plan.ActionCreate},
	}}
	opts := render.Options{Namespace: "prod"}
	s := &Plan{Created: planned, Cluster: here, PlannedBy: Provenance{Tool: "helm-safe-upgrade/test"},
		ApplyFlags: ApplyFlags(opts, false), ChartRef: "./app", ChartDigest: ChartDigest(ch),
		ValuesDigest: ValuesDigest(nil, opts),
		Manifest:     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: a}\n",
		Hooks:        []*release.Hook{{Name: "migrate", Kind: "Job", Manifest: "kind: Job", Events: []release.HookEvent{release.HookPreUpgrade}}},
		Notes:        "hello", MaskKey: []byte("0123456789abcdef"),
		Reports: map[string]string{"text": "report\n", "json": "{}\n", "markdown": "# report\n"}}
	s.Release.Name, s.Release.Namespace, s.Release.LastRevision = "app", "prod", 1
	for _, c := range p.Changes {
		s.Objects = append(s.Objects, Object{Object: c.ID.String(), ResourceVersion: c.LiveResourceVersion, StateDigest: StateDigest(c)})
	}
	return p, opts, s
}

// clear are the keys of a plan in clear: the checks of what is inside the
// file are the same for an encrypted one, and a clear file can be edited
// field by field.
var clear = Keys{Unencrypted: true}

func save(t *testing.T) (string, *plan.Plan, render.Options) {
	t.Helper()
	return saveWith(t, clear)
}

func saveWith(t *testing.T, keys Keys) (string, *plan.Plan, render.Options) {
	t.Helper()
	p, opts, s := fixture(t)
	path := filepath.Join(t.TempDir(), "plan")
	if err := Write(path, s, keys); err != nil {
		t.Fatal(err)
	}
	return path, p, opts
}

func TestSavedPlanRoundTrip(t *testing.T) {
	path, _, opts := save(t)
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("saved plan %v, mode %v; want 0600", err, info.Mode())
	}
	s, err := Verify(path, clear, "app", "prod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Manifest, "mode: a") || len(s.Hooks) != 1 || s.Cluster != here || !s.Created.Equal(planned) {
		t.Fatalf("loaded %+v", s)
	}
	if err := s.check(here, ApplyFlags(opts, false), planned, time.Hour); err != nil {
		t.Fatalf("the same cluster, flags and time: %v", err)
	}
	if _, err := Verify(path, clear, "other", "prod"); err == nil || !strings.Contains(err.Error(), "made for release prod/app, not prod/other") {
		t.Fatalf("another release: %v", err)
	}
}

// TestSavedPlanRefusesEdits: whatever is changed in a clear file, Verify
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
			_, err = Verify(path, clear, "app", "prod")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v, want one naming %s and saying %q", err, path, tc.want)
			}
		})
	}
}

func TestSavedPlanCheck(t *testing.T) {
	path, _, opts := save(t)
	s, err := Verify(path, clear, "app", "prod")
	if err != nil {
		t.Fatal(err)
	}
	noHooks := opts
	noHooks.DisableHooks = true
	hideNotes := opts
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
			flags: ApplyFlags(opts, false), now: planned, want: "made for another cluster"},
		{name: "another context", id: ClusterIdentity{Server: here.Server, KubeSystemUID: here.KubeSystemUID, Context: "prod"},
			flags: ApplyFlags(opts, false), now: planned, want: `context "dev"`},
		{name: "--no-hooks at apply only", id: here, flags: ApplyFlags(noHooks, false), now: planned,
			want: "made with DisableHooks=false, this run has true"},
		{name: "--force at apply only", id: here, flags: ApplyFlags(opts, true), now: planned,
			want: "made with Force=false, this run has true"},
		{name: "too old", id: here, flags: ApplyFlags(opts, false), now: planned.Add(2 * time.Hour), maxAge: time.Hour,
			want: "2h0m0s old, more than --plan-max-age 1h0m0s"},
		{name: "--hide-notes at apply only", id: here, flags: ApplyFlags(hideNotes, false), now: planned},
		{name: "old but no limit", id: here, flags: ApplyFlags(opts, false), now: planned.Add(2 * time.Hour)},
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
	path, pl, _ := save(t)
	s, err := Verify(path, clear, "app", "prod")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.unmoved(pl); err != nil {
		t.Fatalf("nothing moved: %v", err)
	}
	now := *pl
	now.Changes = append([]plan.Change(nil), pl.Changes...)
	now.Changes[1].Action, now.Changes[1].LiveResourceVersion = plan.ActionUpdate, "9"
	now.Changes[1].Before = &unstructured.Unstructured{Object: map[string]interface{}{"data": map[string]interface{}{}}}
	if err := s.unmoved(&now); err == nil || !strings.Contains(err.Error(), "ConfigMap/prod/new, which the plan creates, appeared") {
		t.Fatalf("error %v, want the created ConfigMap named", err)
	}
}

func TestProvenanceFrom(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want Provenance
	}{
		{"no CI", nil, Provenance{Tool: "t"}},
		{"GitHub Actions", map[string]string{"GITHUB_SHA": "abc", "GITHUB_RUN_ID": "1"}, Provenance{Tool: "t", Commit: "abc", Pipeline: "1"}},
		{"GitLab CI", map[string]string{"CI_COMMIT_SHA": "def", "CI_PIPELINE_ID": "2"}, Provenance{Tool: "t", Commit: "def", Pipeline: "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ProvenanceFrom("t", func(k string) string { return tc.env[k] }); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
