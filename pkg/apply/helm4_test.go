package apply

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	chart3 "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	rcommon4 "helm.sh/helm/v4/pkg/release/common"
	rel4 "helm.sh/helm/v4/pkg/release/v1"
	driver4 "helm.sh/helm/v4/pkg/storage/driver"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

func TestSameObjects(t *testing.T) {
	const planned = "---\n# Source: c/templates/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: \"1\"\n" +
		"---\n# Source: c/templates/b.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: b\nspec:\n  ports:\n  - port: 80\n"
	tests := []struct {
		name, other string
		want        bool
	}{
		{"the same bytes", planned, true},
		{"re-serialised and reordered, as Helm 4 files a post-renderer's output",
			"---\n# Source: generated-by-postrender-manifests-1.yaml\napiVersion: v1\nkind: Service\nmetadata: {name: b}\nspec:\n  ports:\n    - port: 80\n" +
				"---\n# Source: generated-by-postrender-manifests-0.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: '1'}\n---\n", true},
		{"a value differs", strings.Replace(planned, `k: "1"`, "k: \"2\"", 1), false},
		{"a string became a number", strings.Replace(planned, `k: "1"`, "k: 1", 1), false},
		{"an object is missing", planned[:strings.Index(planned, "---\n# Source: c/templates/b.yaml")], false},
		{"an object is twice", planned + planned[strings.Index(planned, "---\n# Source: c/templates/b.yaml"):], false},
		{"not YAML", "---\n: : [\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameObjects(tt.other, planned); got != tt.want {
				t.Errorf("sameObjects = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestConvertChart(t *testing.T) {
	sub := &chart3.Chart{Metadata: &chart3.Metadata{Name: "sub", Version: "0.1.0", APIVersion: "v2"},
		Templates: []*chart3.File{{Name: "templates/s.yaml", Data: []byte("kind: S")}}}
	top := &chart3.Chart{
		Metadata:  &chart3.Metadata{Name: "top", Version: "1.2.3", APIVersion: "v2", Dependencies: []*chart3.Dependency{{Name: "sub", Version: "0.1.0"}}},
		Templates: []*chart3.File{{Name: "templates/t.yaml", Data: []byte("kind: T")}},
		Files:     []*chart3.File{{Name: "README.md", Data: []byte("read me")}},
		Values:    map[string]interface{}{"nested": chartutil.Values{"n": float64(1)}, "list": []interface{}{chartutil.Values{"a": "b"}}},
		Schema:    []byte(`{"type":"object"}`),
	}
	top.SetDependencies(sub)
	got, err := convertChart(top)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name() != "top" || got.Metadata.Version != "1.2.3" || len(got.Metadata.Dependencies) != 1 ||
		len(got.Templates) != 1 || string(got.Templates[0].Data) != "kind: T" || string(got.Files[0].Data) != "read me" ||
		string(got.Schema) != `{"type":"object"}` {
		t.Errorf("converted chart %+v, metadata %+v", got, got.Metadata)
	}
	if deps := got.Dependencies(); len(deps) != 1 || deps[0].Name() != "sub" || deps[0].Parent() != got || string(deps[0].Templates[0].Data) != "kind: S" {
		t.Errorf("dependencies %+v", deps)
	}
	nested, ok := got.Values["nested"].(map[string]interface{})
	if !ok || nested["n"] != float64(1) {
		t.Errorf("values %#v: want plain maps", got.Values)
	}
	if l, ok := got.Values["list"].([]interface{}); !ok || len(l) != 1 {
		t.Errorf("values %#v", got.Values)
	} else if _, ok := l[0].(map[string]interface{}); !ok {
		t.Errorf("list item %T, want a plain map", l[0])
	}
}

// pending4 is the record Helm 4 creates first for an upgrade.
func pending4(version int, manifest string) *rel4.Release {
	return &rel4.Release{Name: relName, Namespace: relNS, Version: version, Manifest: manifest, ApplyMethod: "ssa",
		Hooks: []*rel4.Hook{{Name: "re-rendered", Kind: "Job"}},
		Info:  &rel4.Info{Status: rcommon4.StatusPendingUpgrade, Notes: "re-rendered notes", Description: "Preparing upgrade"}}
}

// TestPlannedStore4: Helm 4's store keeps the planned revision as planned
// (manifest bytes, hooks, notes) and apply_method as Helm 4 set it, and
// refuses another revision, other objects, or a write after cancellation.
func TestPlannedStore4(t *testing.T) {
	const manifest = "---\n# Source: rand/templates/configmap.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-config\ndata:\n  message: \"hi\"\n"
	reformatted := "---\n# Source: generated-by-postrender-manifests-0.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-config}\ndata: {message: hi}\n"
	next := &release.Release{Name: relName, Namespace: relNS, Version: 3, Manifest: manifest,
		Hooks: []*release.Hook{{Name: "app-hook", Kind: "Pod", Manifest: "kind: Pod", Events: []release.HookEvent{release.HookPreUpgrade}}},
		Info:  &release.Info{Notes: "planned notes"}}
	tests := []struct {
		name    string
		rls     *rel4.Release
		cancel  bool
		wantErr string
		wantIs  error
	}{
		{name: "the planned revision, re-serialised by Helm 4", rls: pending4(3, reformatted)},
		{name: "another revision", rls: pending4(4, reformatted), wantIs: ErrStale},
		{name: "other objects", rls: pending4(3, strings.Replace(reformatted, "hi", "bye", 1)), wantErr: "a manifest other than the planned one"},
		{name: "cancelled", rls: pending4(3, reformatted), cancel: true, wantErr: "the apply was cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				cancel()
			}
			mem := driver4.NewMemory()
			mem.SetNamespace(relNS)
			s := &plannedStore4{Driver: mem, plannedGuard: &plannedGuard{ctx: ctx, next: next}}
			err := s.Create("sh.helm.release.v1.app.v3", tt.rls)
			if tt.wantIs != nil || tt.wantErr != "" {
				if err == nil || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Create: %v, want %v %q", err, tt.wantIs, tt.wantErr)
				}
				if s.started() {
					t.Error("refused, but the store says Helm wrote")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := mem.Get("sh.helm.release.v1.app.v3")
			if err != nil {
				t.Fatal(err)
			}
			r := got.(*rel4.Release)
			if r.Manifest != manifest || r.Info.Notes != "planned notes" || r.ApplyMethod != "ssa" ||
				len(r.Hooks) != 1 || r.Hooks[0].Name != "app-hook" || r.Hooks[0].Events[0] != "pre-upgrade" {
				t.Errorf("stored %+v hooks %+v info %+v, want the planned manifest, hooks and notes, apply_method ssa", r, r.Hooks, r.Info)
			}
		})
	}
}

// TestHelm4Refuses: what Helm 4 refuses, or what cannot be applied with its
// SDK, is refused before anything is written.
func TestHelm4Refuses(t *testing.T) {
	tests := []struct {
		name   string
		method string
		modify func(*Request)
		want   string
	}{
		{"--force-replace with server-side apply", plan.ApplyMethodSSA, func(r *Request) { r.Force = true }, "Helm 4 refuses it with server-side apply"},
		{"--recreate-pods", plan.ApplyMethodSSA, func(r *Request) { r.Render.RecreatePods = true }, "--recreate-pods does not exist in Helm 4"},
		{"a release storage Helm 4 cannot share", plan.ApplyMethodSSA, func(*Request) {}, "cannot use the"},
		{"--force-conflicts on a client-side apply", plan.ApplyMethodCSA, func(r *Request) { r.Render.ForceConflicts = true }, "--force-conflicts applies only to a server-side apply"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.seed(t)
			rendered := f.plan(t, render.Options{})
			req := f.request(t, rendered)
			req.ApplyMethod = tt.method
			tt.modify(&req)
			kube0, store0 := f.writes()
			_, err := apply(context.Background(), req, io.Discard, noCluster(t))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "nothing was written") {
				t.Fatalf("apply: %v, want %q and nothing was written", err, tt.want)
			}
			if kube, store := f.writes(); kube != kube0 || store != store0 {
				t.Errorf("writes: kube %d, release storage %d, want none", kube-kube0, store-store0)
			}
		})
	}
}

func TestLogHandler(t *testing.T) {
	var lines []string
	l := slog.New(logHandler{log: func(format string, args ...interface{}) {
		lines = append(lines, strings.TrimSpace(strings.ReplaceAll(format, "%s", args[0].(string))))
	}})
	l.With("release", "app").Debug("upgrading", "revision", 3)
	if len(lines) != 1 || lines[0] != "upgrading release=app revision=3" {
		t.Errorf("logged %q", lines)
	}
}
