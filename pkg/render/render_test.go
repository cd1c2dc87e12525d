package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/kube"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/helmtest"
)

const (
	relName = "app"
	relNS   = "demo"
)

var chartDir = filepath.Join("testdata", "charts", "app")

// countingKube is Helm's printing fake kube client that counts the calls
// that matter and fails Build and every write.
type countingKube struct {
	kubefake.PrintingKubeClient
	builds, writes, reachable atomic.Int32
}

func (c *countingKube) IsReachable() error {
	c.reachable.Add(1)
	return nil
}

func (c *countingKube) Build(io.Reader, bool) (kube.ResourceList, error) {
	c.builds.Add(1)
	return nil, errors.New("test: Build called on the real kube client")
}

func (c *countingKube) Create(kube.ResourceList) (*kube.Result, error) {
	c.writes.Add(1)
	return nil, errors.New("test: Create called")
}

func (c *countingKube) Update(_, _ kube.ResourceList, _ bool) (*kube.Result, error) {
	c.writes.Add(1)
	return nil, errors.New("test: Update called")
}

func (c *countingKube) Delete(kube.ResourceList) (*kube.Result, []error) {
	c.writes.Add(1)
	return nil, []error{errors.New("test: Delete called")}
}

func (c *countingKube) WatchUntilReady(kube.ResourceList, time.Duration) error {
	c.writes.Add(1) // hooks: Helm would have created them first
	return errors.New("test: WatchUntilReady called")
}

type fixture struct {
	cfg   *action.Configuration
	kube  *countingKube
	store *helmtest.CountingDriver
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{
		kube:  &countingKube{PrintingKubeClient: kubefake.PrintingKubeClient{Out: io.Discard, LogOutput: io.Discard}},
		store: helmtest.NewCountingDriver(relNS),
	}
	f.cfg = helmtest.Config(t, f.store, f.kube)
	return f
}

// seed stores a revision rendered by Render itself (a real install or
// upgrade record), with the given status.
func (f *fixture) seed(t *testing.T, chart string, status release.Status, set ...string) *release.Release {
	t.Helper()
	opts := baseOptions()
	opts.Install = true
	opts.Values.Values = set
	res, err := Render(context.Background(), f.cfg, helmtest.Settings(t), relName, chart, opts)
	if err != nil {
		t.Fatalf("seed render: %v", err)
	}
	rel := res.Next
	rel.Info.Status = status
	if err := f.cfg.Releases.Create(rel); err != nil {
		t.Fatalf("seed store: %v", err)
	}
	return rel
}

func baseOptions() Options {
	return Options{Namespace: relNS, Timeout: DefaultTimeout}
}

// configData returns the value of key in the rendered ConfigMap's data.
func configData(t *testing.T, manifest, key string) string {
	t.Helper()
	for _, line := range strings.Split(manifest, "\n") {
		if v, ok := strings.CutPrefix(line, "  "+key+": "); ok {
			return strings.Trim(v, `"`)
		}
	}
	t.Fatalf("no %q in manifest:\n%s", key, manifest)
	return ""
}

// chartWithDefaults copies the test chart with another values.yaml and
// version: the "new chart" of an upgrade.
func chartWithDefaults(t *testing.T, valuesYAML string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "app")
	err := filepath.Walk(chartDir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(chartDir, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		switch rel {
		case "values.yaml":
			b = []byte(valuesYAML)
		case "Chart.yaml":
			b = []byte(strings.Replace(string(b), "version: 0.1.0", "version: 0.2.0", 1))
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestRender(t *testing.T) {
	newDefaults := "message: hello\nreplicas: 1\nimage: nginx:2.0\n"

	tests := []struct {
		name  string
		setup func(t *testing.T, f *fixture)
		chart func(t *testing.T) string // default: chartDir
		opts  func(o *Options)
		// exactly one of wantErr (substrings) or check
		wantErr   []string
		wantErrIs error
		check     func(t *testing.T, f *fixture, res *Result)
	}{
		{
			name: "install when the release does not exist and --install",
			opts: func(o *Options) { o.Install = true },
			check: func(t *testing.T, _ *fixture, res *Result) {
				if !res.Install || res.Previous != nil || res.Last != nil {
					t.Fatalf("Install=%v Previous=%v Last=%v", res.Install, res.Previous, res.Last)
				}
				if res.Next.Version != 1 || res.Next.Namespace != relNS || res.Next.Name != relName {
					t.Errorf("next = %s/%s v%d", res.Next.Namespace, res.Next.Name, res.Next.Version)
				}
				if got := configData(t, res.Next.Manifest, "isUpgrade"); got != "false" {
					t.Errorf("isUpgrade = %s", got)
				}
				if res.Next.Info.Notes != "Release app says hello.\n" {
					t.Errorf("notes = %q", res.Next.Info.Notes)
				}
			},
		},
		{
			name:      "release not found without --install",
			wantErrIs: ErrReleaseNotFound,
			wantErr:   []string{`release "app" not found in namespace demo; use --install to install it`},
		},
		{
			name: "upgrade with --set overriding",
			setup: func(t *testing.T, f *fixture) {
				f.seed(t, chartDir, release.StatusDeployed, "message=first")
			},
			opts: func(o *Options) { o.Values.Values = []string{"message=second"}; o.Description = "planned" },
			check: func(t *testing.T, _ *fixture, res *Result) {
				if res.Install || res.Previous == nil || res.Previous.Version != 1 || res.Last != res.Previous {
					t.Fatalf("Install=%v Previous=%v", res.Install, res.Previous)
				}
				if res.Next.Version != 2 {
					t.Errorf("next version = %d", res.Next.Version)
				}
				if got := configData(t, res.Next.Manifest, "message"); got != "second" {
					t.Errorf("message = %s", got)
				}
				if got := configData(t, res.Next.Manifest, "revision"); got != "2" {
					t.Errorf("revision = %s", got)
				}
				if got := configData(t, res.Next.Manifest, "isUpgrade"); got != "true" {
					t.Errorf("isUpgrade = %s", got)
				}
				if !reflect.DeepEqual(res.Next.Config, map[string]interface{}{"message": "second"}) {
					t.Errorf("config = %v", res.Next.Config)
				}
				if !reflect.DeepEqual(res.Values, map[string]interface{}{"message": "second"}) {
					t.Errorf("values = %v", res.Values)
				}
				if res.Next.Info.Description != "planned" {
					t.Errorf("description = %q", res.Next.Info.Description)
				}
			},
		},
		{
			name: "values file then --set, in helm's order",
			setup: func(t *testing.T, f *fixture) {
				f.seed(t, chartDir, release.StatusDeployed)
			},
			opts: func(o *Options) {
				o.Values.ValueFiles = []string{filepath.Join("testdata", "values", "override.yaml")}
				o.Values.Values = []string{"replicas=7"}
			},
			check: func(t *testing.T, _ *fixture, res *Result) {
				if got := configData(t, res.Next.Manifest, "message"); got != "from-file" {
					t.Errorf("message = %s", got)
				}
				if got := configData(t, res.Next.Manifest, "replicas"); got != "7" {
					t.Errorf("replicas = %s", got)
				}
			},
		},
		{
			name: "no values given: helm reuses the previous ones",
			setup: func(t *testing.T, f *fixture) {
				f.seed(t, chartDir, release.StatusDeployed, "message=first")
			},
			check: func(t *testing.T, _ *fixture, res *Result) {
				if got := configData(t, res.Next.Manifest, "message"); got != "first" {
					t.Errorf("message = %s", got)
				}
			},
		},
		{
			name: "--reset-values drops the previous values",
			setup: func(t *testing.T, f *fixture) {
				f.seed(t, chartDir, release.StatusDeployed, "message=first")
			},
			opts: func(o *Options) { o.ResetValues = true },
			check: func(t *testing.T, _ *fixture, res *Result) {
				if got := configData(t, res.Next.Manifest, "message"); got != "hello" {
					t.Errorf("message = %s", got)
				}
			},
		},
		{
			name: "--reuse-values keeps previous user values and the old chart defaults",
			setup: func(t *testing.T, f *fixture) {
				f.seed(t, chartDir, release.StatusDeployed, "message=first", "replicas=3")
			},
			chart: func(t *testing.T) string { return chartWithDefaults(t, newDefaults) },
			opts:  func(o *Options) { o.ReuseValues = true; o.Values.Values = []string{"replicas=4"} },
			check: func(t *testing.T, _ *fixture, res *Result) {
				m := res.Next.Manifest
				if got := configData(t, m, "message"); got != "first" {
					t.Errorf("message = %s", got)
				}
				if got := configData(t, m, "replicas"); got != "4" {
					t.Errorf("replicas = %s", got)
				}
				if got := configData(t, m, "image"); got != "nginx:1.0" {
					t.Errorf("image = %s, want the old chart's default", got)
				}
				// Helm merges into the previous values; Previous must not change.
				if !reflect.DeepEqual(res.Previous.Config, map[string]interface{}{"message": "first", "replicas": int64(3)}) {
					t.Errorf("previous config changed: %#v", res.Previous.Config)
				}
			},
		},
		{
			name: "--reset-then-reuse-values keeps previous user values and the new chart defaults",
			setup: func(t *testing.T, f *fixture) {
				f.seed(t, chartDir, release.StatusDeployed, "message=first")
			},
			chart: func(t *testing.T) string { return chartWithDefaults(t, newDefaults) },
			opts:  func(o *Options) { o.ResetThenReuseValues = true },
			check: func(t *testing.T, _ *fixture, res *Result) {
				if got := configData(t, res.Next.Manifest, "message"); got != "first" {
					t.Errorf("message = %s", got)
				}
				if got := configData(t, res.Next.Manifest, "image"); got != "nginx:2.0" {
					t.Errorf("image = %s, want the new chart's default", got)
				}
			},
		},
		{
			name: "values file with a YAML error names the file and the line",
			setup: func(t *testing.T, f *fixture) {
				f.seed(t, chartDir, release.StatusDeployed)
			},
			opts:    func(o *Options) { o.Values.ValueFiles = []string{filepath.Join("testdata", "values", "broken.yaml")} },
			wantErr: []string{filepath.Join("testdata", "values", "broken.yaml"), "line 3"},
		},
		{
			name:    "missing chart names the path",
			chart:   func(*testing.T) string { return "./testdata/charts/nope" },
			opts:    func(o *Options) { o.Install = true },
			wantErr: []string{`"./testdata/charts/nope"`, "not found"},
		},
		{
			name: "pending-upgrade is refused with a rollback hint",
			setup: func(t *testing.T, f *fixture) {
				f.seed(t, chartDir, release.StatusDeployed)
				helmtest.NextRevision(t, f.cfg, relName, release.StatusPendingUpgrade)
			},
			opts:      func(o *Options) { o.Install = true },
			wantErrIs: releasestate.ErrReleasePending,
			wantErr:   []string{"pending-upgrade at revision 2", "helm rollback app 1 -n demo"},
		},
		{
			name: "pending-install is refused",
			setup: func(t *testing.T, f *fixture) {
				f.seed(t, chartDir, release.StatusPendingInstall)
			},
			wantErrIs: releasestate.ErrReleasePending,
			wantErr:   []string{"pending-install at revision 1", "helm uninstall app -n demo"},
		},
		{
			name: "after a failed upgrade helm diffs against the last deployed revision",
			setup: func(t *testing.T, f *fixture) {
				f.seed(t, chartDir, release.StatusSuperseded, "message=one")
				helmtest.NextRevision(t, f.cfg, relName, release.StatusDeployed)
				helmtest.NextRevision(t, f.cfg, relName, release.StatusFailed)
			},
			check: func(t *testing.T, _ *fixture, res *Result) {
				if res.Previous.Version != 2 || res.Last.Version != 3 || res.Next.Version != 4 {
					t.Errorf("previous v%d last v%d next v%d", res.Previous.Version, res.Last.Version, res.Next.Version)
				}
			},
		},
		{
			name: "only a failed install: it is the previous release",
			setup: func(t *testing.T, f *fixture) {
				f.seed(t, chartDir, release.StatusFailed)
			},
			check: func(t *testing.T, _ *fixture, res *Result) {
				if res.Install || res.Previous.Version != 1 || res.Next.Version != 2 {
					t.Errorf("install=%v previous v%d next v%d", res.Install, res.Previous.Version, res.Next.Version)
				}
			},
		},
		{
			name: "uninstalled with kept history, without --install",
			setup: func(t *testing.T, f *fixture) {
				f.seed(t, chartDir, release.StatusUninstalled)
			},
			wantErrIs: ErrReleaseNotFound,
			wantErr:   []string{"was uninstalled; use --install"},
		},
		{
			name: "uninstalled with kept history, with --install: an install as the next revision",
			setup: func(t *testing.T, f *fixture) {
				f.seed(t, chartDir, release.StatusUninstalled)
			},
			opts: func(o *Options) { o.Install = true },
			check: func(t *testing.T, _ *fixture, res *Result) {
				if !res.Install || res.Previous != nil || res.Last.Version != 1 || res.Next.Version != 2 {
					t.Errorf("install=%v previous=%v next v%d", res.Install, res.Previous, res.Next.Version)
				}
			},
		},
		{
			name: "randAlphaNum and hooks: hooks go to Next.Hooks, not the manifest",
			setup: func(t *testing.T, f *fixture) {
				f.seed(t, chartDir, release.StatusDeployed)
			},
			check: func(t *testing.T, _ *fixture, res *Result) {
				if !strings.Contains(res.Next.Manifest, "kind: Secret") || !strings.Contains(res.Next.Manifest, "password: ") {
					t.Errorf("no random secret in manifest:\n%s", res.Next.Manifest)
				}
				if strings.Contains(res.Next.Manifest, "kind: Job") {
					t.Errorf("hook in manifest:\n%s", res.Next.Manifest)
				}
				if len(res.Next.Hooks) != 1 || res.Next.Hooks[0].Kind != "Job" || res.Next.Hooks[0].Name != "app-migrate" {
					t.Fatalf("hooks = %+v", res.Next.Hooks)
				}
				evs := res.Next.Hooks[0].Events
				if !reflect.DeepEqual(evs, []release.HookEvent{release.HookPreInstall, release.HookPreUpgrade}) {
					t.Errorf("hook events = %v", evs)
				}
			},
		},
		{
			name: "schema validation applies",
			setup: func(t *testing.T, f *fixture) {
				f.seed(t, chartDir, release.StatusDeployed)
			},
			opts:    func(o *Options) { o.Values.StringValues = []string{"replicas=many"} },
			wantErr: []string{"replicas", "schema"},
		},
		{
			name: "--skip-schema-validation",
			setup: func(t *testing.T, f *fixture) {
				f.seed(t, chartDir, release.StatusDeployed)
			},
			opts: func(o *Options) { o.Values.StringValues = []string{"replicas=many"}; o.SkipSchemaValidation = true },
			check: func(t *testing.T, _ *fixture, res *Result) {
				if got := configData(t, res.Next.Manifest, "replicas"); got != "many" {
					t.Errorf("replicas = %s", got)
				}
			},
		},
		{
			name: "post-renderer with arguments",
			setup: func(t *testing.T, f *fixture) {
				f.seed(t, chartDir, release.StatusDeployed)
			},
			opts: func(o *Options) {
				dir := t.TempDir()
				script := filepath.Join(dir, "post.sh")
				if err := os.WriteFile(script, []byte("#!/bin/sh\nsed \"s/hello/$1/\"\n"), 0o755); err != nil {
					t.Fatal(err)
				}
				o.PostRenderer = script
				o.PostRendererArgs = []string{"post-rendered"}
			},
			check: func(t *testing.T, _ *fixture, res *Result) {
				if got := configData(t, res.Next.Manifest, "message"); got != "post-rendered" {
					t.Errorf("message = %s", got)
				}
			},
		},
		{
			name:    "missing post-renderer names it",
			opts:    func(o *Options) { o.Install = true; o.PostRenderer = "./no-such-post-renderer" },
			wantErr: []string{`post-renderer "./no-such-post-renderer"`},
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.setup != nil {
				tt.setup(t, f)
			}
			chart := chartDir
			if tt.chart != nil {
				chart = tt.chart(t)
			}
			opts := baseOptions()
			if tt.opts != nil {
				tt.opts(&opts)
			}
			before, _ := f.cfg.Releases.History(relName)
			storeWrites := f.store.Writes()
			f.kube.reachable.Store(0)
			origKube, origStore := f.cfg.KubeClient, f.cfg.Releases

			res, err := Render(context.Background(), f.cfg, helmtest.Settings(t), relName, chart, opts)

			switch {
			case tt.wantErr != nil || tt.wantErrIs != nil:
				if err == nil {
					t.Fatalf("no error; manifest:\n%s", res.Next.Manifest)
				}
				t.Logf("error: %v", err)
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				if tt.wantErrIs != nil && !errors.Is(err, tt.wantErrIs) {
					t.Errorf("error %q is not %v", err, tt.wantErrIs)
				}
			case err != nil:
				t.Fatalf("Render: %v", err)
			default:
				if res.Chart == nil || res.Next == nil || res.Next.Chart != res.Chart {
					t.Errorf("result chart %p, next %+v", res.Chart, res.Next)
				}
				if res.Next.Info.Status.IsPending() == false {
					t.Errorf("next status = %s, want helm's pending dry-run status", res.Next.Info.Status)
				}
				tt.check(t, f, res)
				if f.kube.reachable.Load() == 0 {
					t.Errorf("IsReachable was not called on the real client")
				}
			}

			// Nothing was written, nothing built, cfg untouched.
			if n := f.kube.builds.Load(); n != 0 {
				t.Errorf("Build called %d times on the real kube client", n)
			}
			if n := f.kube.writes.Load(); n != 0 {
				t.Errorf("%d writes to the kube client", n)
			}
			if n := f.store.Writes() - storeWrites; n != 0 {
				t.Errorf("%d writes to the release storage", n)
			}
			after, _ := f.cfg.Releases.History(relName)
			if len(after) != len(before) {
				t.Errorf("storage holds %d revisions after Render, %d before", len(after), len(before))
			}
			if f.cfg.KubeClient != origKube || f.cfg.Releases != origStore || f.cfg.Releases.MaxHistory != 0 {
				t.Errorf("Render changed the configuration it was given")
			}
		})
	}
}

func TestRenderContextDone(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	opts := baseOptions()
	opts.Install = true
	_, err := Render(ctx, f.cfg, helmtest.Settings(t), relName, chartDir, opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestRenderBadReleaseName(t *testing.T) {
	f := newFixture(t)
	opts := baseOptions()
	opts.Install = true
	_, err := Render(context.Background(), f.cfg, helmtest.Settings(t), "Bad_Name", chartDir, opts)
	if err == nil || !strings.Contains(err.Error(), `"Bad_Name"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestPlanClientRefusesWrites(t *testing.T) {
	c := &renderClient{Interface: &countingKube{}}
	if rl, err := c.Build(strings.NewReader("kind: ConfigMap"), true); err != nil || len(rl) != 0 {
		t.Errorf("Build = %v, %v", rl, err)
	}
	if _, err := c.Create(nil); !errors.Is(err, ErrWriteRefused) {
		t.Errorf("Create err = %v", err)
	}
	if _, err := c.Update(nil, nil, false); !errors.Is(err, ErrWriteRefused) {
		t.Errorf("Update err = %v", err)
	}
	if _, errs := c.Delete(nil); len(errs) != 1 || !errors.Is(errs[0], ErrWriteRefused) {
		t.Errorf("Delete errs = %v", errs)
	}
	s := newSnapshot("Secret", nil)
	if err := s.Create("k", nil); !errors.Is(err, ErrWriteRefused) {
		t.Errorf("snapshot Create err = %v", err)
	}
}

func ExampleReleaseNotFoundError() {
	err := fmt.Errorf("plan: %w", &ReleaseNotFoundError{Name: "web", Namespace: "prod"})
	fmt.Println(errors.Is(err, ErrReleaseNotFound), err)
	// Output: true plan: release "web" not found in namespace prod; use --install to install it
}
