package apply

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/kube"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/helmtest"
)

const (
	relName = "app"
	relNS   = "demo"
)

var randChart = filepath.Join("testdata", "charts", "rand")

// recordingKube is Helm's printing fake kube client recording what Helm
// builds and writes.
type recordingKube struct {
	kubefake.PrintingKubeClient
	// onReachable runs when Helm's action starts (IsReachable is its first
	// call); updateErr makes the first Update fail.
	onReachable func()
	updateErr   error

	mu     sync.Mutex
	builds []string // every manifest Helm built, in order
	forces []bool   // the force argument of every Update
	writes int
}

func (k *recordingKube) IsReachable() error {
	if k.onReachable != nil {
		k.onReachable()
	}
	return nil
}

func (k *recordingKube) Build(r io.Reader, validate bool) (kube.ResourceList, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.builds = append(k.builds, string(b))
	k.mu.Unlock()
	return k.PrintingKubeClient.Build(bytes.NewReader(b), validate)
}

func (k *recordingKube) Create(rl kube.ResourceList) (*kube.Result, error) {
	k.count()
	return k.PrintingKubeClient.Create(rl)
}

func (k *recordingKube) Update(original, target kube.ResourceList, force bool) (*kube.Result, error) {
	k.count()
	k.mu.Lock()
	k.forces = append(k.forces, force)
	k.mu.Unlock()
	if err := k.updateErr; err != nil {
		k.updateErr = nil
		return &kube.Result{}, err
	}
	return k.PrintingKubeClient.Update(original, target, force)
}

func (k *recordingKube) Delete(rl kube.ResourceList) (*kube.Result, []error) {
	k.count()
	return k.PrintingKubeClient.Delete(rl)
}

func (k *recordingKube) count() {
	k.mu.Lock()
	k.writes++
	k.mu.Unlock()
}

type fixture struct {
	cfg   *action.Configuration
	kube  *recordingKube
	store *helmtest.CountingDriver
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{
		kube:  &recordingKube{PrintingKubeClient: kubefake.PrintingKubeClient{Out: io.Discard, LogOutput: io.Discard}},
		store: helmtest.NewCountingDriver(relNS),
	}
	f.cfg = helmtest.Config(t, f.store, f.kube)
	return f
}

// plan renders the next revision of the test release as the plan does.
func (f *fixture) plan(t *testing.T, opts render.Options) *render.Result {
	t.Helper()
	opts.Namespace = relNS
	if opts.Timeout == 0 {
		opts.Timeout = render.DefaultTimeout
	}
	res, err := render.Render(context.Background(), f.cfg, helmtest.Settings(t), relName, randChart, opts)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return res
}

// seed stores a deployed first revision. Its manifest also holds the
// objects of the fake cluster the recreate tests delete (deployedObjects):
// a recreate and a restore act only on objects of the deployed revision.
func (f *fixture) seed(t *testing.T) *release.Release {
	t.Helper()
	rel := f.plan(t, render.Options{Install: true}).Next
	rel.Info.Status = release.StatusDeployed
	rel.Manifest += deployedObjects
	if err := f.cfg.Releases.Create(rel); err != nil {
		t.Fatal(err)
	}
	return rel
}

// writes counts the writes to the cluster and to the release storage.
func (f *fixture) writes() (kube, store int) {
	f.kube.mu.Lock()
	defer f.kube.mu.Unlock()
	return f.kube.writes, f.store.Writes()
}

func (f *fixture) request(t *testing.T, rendered *render.Result) Request {
	return Request{Config: f.cfg, Settings: helmtest.Settings(t), ReleaseName: relName, ChartRef: randChart,
		Render: render.Options{Namespace: relNS, Timeout: render.DefaultTimeout}, Rendered: rendered, Log: t.Logf}
}

// noCluster fails the test if Apply wants the cluster for a recreate.
func noCluster(t *testing.T) func(action.RESTClientGetter) (*live.Cluster, error) {
	return func(action.RESTClientGetter) (*live.Cluster, error) {
		t.Error("the recreate step connected to the cluster")
		return nil, errors.New("no cluster in this test")
	}
}

// secretValue returns the password of the rendered Secret.
func secretValue(t *testing.T, m string) string {
	t.Helper()
	for _, line := range strings.Split(m, "\n") {
		if v, ok := strings.CutPrefix(line, "  password: "); ok {
			return v
		}
	}
	t.Fatalf("no password in manifest:\n%s", m)
	return ""
}

func TestApplyAppliesThePlannedRender(t *testing.T) {
	tests := []struct {
		name    string
		install bool
	}{
		{name: "upgrade"},
		{name: "install", install: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if !tt.install {
				f.seed(t)
			}
			rendered := f.plan(t, render.Options{Install: tt.install})
			again := f.plan(t, render.Options{Install: tt.install})
			if secretValue(t, again.Next.Manifest) == secretValue(t, rendered.Next.Manifest) ||
				again.Next.Hooks[0].Manifest == rendered.Next.Hooks[0].Manifest {
				t.Fatal("the chart rendered the same random values twice: the test proves nothing")
			}
			planned := rendered.Next.Manifest
			plannedHook := rendered.Next.Hooks[0].Manifest
			plannedNotes := rendered.Next.Info.Notes

			rel, err := apply(context.Background(), f.request(t, rendered), io.Discard, noCluster(t))
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			stored, err := f.cfg.Releases.Get(relName, rendered.Next.Version)
			if err != nil {
				t.Fatal(err)
			}
			if stored.Manifest != planned || rel.Manifest != planned {
				t.Errorf("stored manifest differs from the plan:\n%s\nwant:\n%s", stored.Manifest, planned)
			}
			if stored.Info.Status != release.StatusDeployed {
				t.Errorf("status = %s", stored.Info.Status)
			}
			if len(stored.Hooks) != 1 || stored.Hooks[0].Manifest != plannedHook {
				t.Errorf("stored hooks differ from the plan: %+v", stored.Hooks)
			}
			if stored.Hooks[0].LastRun.Phase != release.HookPhaseSucceeded {
				t.Errorf("the planned hook did not run: %+v", stored.Hooks[0].LastRun)
			}
			if stored.Info.Notes != plannedNotes {
				t.Errorf("notes = %q, want %q", stored.Info.Notes, plannedNotes)
			}
			// What Helm built and applied: the planned manifest and hook.
			built := strings.Join(f.kube.builds, "\n---built---\n")
			if !strings.Contains(built, planned) || !strings.Contains(built, plannedHook) {
				t.Errorf("Helm did not build the planned manifest and hook; it built:\n%s", built)
			}
			if strings.Contains(built, secretValue(t, again.Next.Manifest)) {
				t.Error("Helm built a re-rendered Secret")
			}
			// The plan is not changed by applying it.
			if rendered.Next.Hooks[0].LastRun.Phase != "" || rendered.Next.Manifest != planned {
				t.Error("apply changed the planned render")
			}
		})
	}
}

func TestApplyFlags(t *testing.T) {
	tests := []struct {
		name        string
		force       bool
		description string
		flagDesc    string // --description
		wantForce   bool
		wantDesc    string
	}{
		{name: "defaults", wantDesc: "Upgrade complete"},
		{name: "force only when asked", force: true, wantForce: true, wantDesc: "Upgrade complete"},
		{name: "audit description", description: "safe-upgrade: 1 recreate-required acked (StatefulSet/db via ack-file), 2 rolling", wantDesc: "safe-upgrade: 1 recreate-required acked (StatefulSet/db via ack-file), 2 rolling"},
		{name: "--description when no audit text", flagDesc: "by hand", wantDesc: "by hand"},
		{name: "audit text wins over --description", description: "audit", flagDesc: "by hand", wantDesc: "audit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.seed(t)
			req := f.request(t, f.plan(t, render.Options{}))
			req.Force, req.Description, req.Render.Description = tt.force, tt.description, tt.flagDesc
			if _, err := apply(context.Background(), req, io.Discard, noCluster(t)); err != nil {
				t.Fatalf("apply: %v", err)
			}
			if want := []bool{tt.wantForce}; !reflect.DeepEqual(f.kube.forces, want) {
				t.Errorf("force passed to Helm's Update = %v, want %v", f.kube.forces, want)
			}
			stored, err := f.cfg.Releases.Get(relName, 2)
			if err != nil {
				t.Fatal(err)
			}
			if stored.Info.Description != tt.wantDesc {
				t.Errorf("description = %q, want %q", stored.Info.Description, tt.wantDesc)
			}
		})
	}
}

func TestApplyKeepsPlannedValues(t *testing.T) {
	f := newFixture(t)
	f.seed(t)
	rendered := f.plan(t, render.Options{ReuseValues: true})
	rendered.Values = map[string]interface{}{"extra": map[string]interface{}{"k": "v"}}
	req := f.request(t, rendered)
	req.Render.ReuseValues = true
	if _, err := apply(context.Background(), req, io.Discard, noCluster(t)); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if want := map[string]interface{}{"extra": map[string]interface{}{"k": "v"}}; !reflect.DeepEqual(rendered.Values, want) {
		t.Errorf("apply changed the planned values: %v", rendered.Values)
	}
	stored, err := f.cfg.Releases.Get(relName, 2)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Config["message"] != nil || stored.Config["extra"] == nil {
		t.Errorf("stored values = %v", stored.Config)
	}
}

func recreateChange(group, kind, ns, name string) plan.Change {
	return plan.Change{
		ID:     manifest.ObjectID{Group: group, Kind: kind, Namespace: ns, Name: name},
		Action: plan.ActionUpdate, Class: plan.ClassRecreateRequired, Destructive: true, Acknowledged: true,
	}
}

func TestApplyRefuses(t *testing.T) {
	tests := []struct {
		name string
		// after runs between the plan and the apply.
		after    func(t *testing.T, f *fixture)
		recreate []plan.Change
		cancel   bool
		wantIs   error
		wantErr  []string
	}{
		{
			name:     "CustomResourceDefinition recreate",
			recreate: []plan.Change{recreateChange("apiextensions.k8s.io", "CustomResourceDefinition", "", "widgets.example.com")},
			wantIs:   ErrRecreateRefused,
			wantErr:  []string{"CustomResourceDefinition.apiextensions.k8s.io/widgets.example.com: recreate refused", "deletes every custom resource of its kind"},
		},
		{
			name:     "Namespace recreate",
			recreate: []plan.Change{recreateChange("", "Namespace", "", "demo")},
			wantIs:   ErrRecreateRefused,
			wantErr:  []string{"Namespace/demo: recreate refused", "deletes everything inside it"},
		},
		{
			name:     "PersistentVolumeClaim recreate, even acknowledged",
			recreate: []plan.Change{recreateChange("", "PersistentVolumeClaim", relNS, "data")},
			wantIs:   ErrRecreateRefused,
			wantErr:  []string{"PersistentVolumeClaim/demo/data: recreate refused: safe-upgrade never deletes a volume"},
		},
		{
			name:     "PersistentVolume recreate, even acknowledged",
			recreate: []plan.Change{recreateChange("", "PersistentVolume", "", "pv-1")},
			wantIs:   ErrRecreateRefused,
			wantErr:  []string{"PersistentVolume/pv-1: recreate refused: safe-upgrade never deletes a volume"},
		},
		{
			name: "unacknowledged recreate",
			recreate: []plan.Change{func() plan.Change {
				c := recreateChange("", "Service", relNS, "app-db")
				c.Acknowledged = false
				return c
			}()},
			wantIs:  ErrRecreateRefused,
			wantErr: []string{"Service/demo/app-db: recreate refused: the change is not acknowledged"},
		},
		{
			name: "recreate of a rolling change",
			recreate: []plan.Change{func() plan.Change {
				c := recreateChange("apps", "Deployment", relNS, "web")
				c.Class = plan.ClassRolling
				return c
			}()},
			wantIs:  ErrRecreateRefused,
			wantErr: []string{"Deployment.apps/demo/web: recreate refused: the plan says update (rolling)"},
		},
		{
			name:    "pending upgrade since the plan",
			after:   func(t *testing.T, f *fixture) { helmtest.NextRevision(t, f.cfg, relName, release.StatusPendingUpgrade) },
			wantIs:  releasestate.ErrReleasePending,
			wantErr: []string{"is pending-upgrade at revision 2", "helm rollback app 1 -n demo"},
		},
		{
			name:    "another upgrade since the plan",
			after:   func(t *testing.T, f *fixture) { helmtest.NextRevision(t, f.cfg, relName, release.StatusDeployed) },
			wantIs:  ErrStale,
			wantErr: []string{`release "app" in namespace demo moved from revision 1 to 2 since the plan; plan again`},
		},
		{
			name: "uninstalled with --keep-history since the plan",
			after: func(t *testing.T, f *fixture) {
				last, _ := f.cfg.Releases.Last(relName)
				// A copy: the memory driver hands out its own records.
				uninstalled, info := *last, *last.Info
				info.Status = release.StatusUninstalled
				uninstalled.Info = &info
				if err := f.cfg.Releases.Update(&uninstalled); err != nil {
					t.Fatal(err)
				}
			},
			wantIs:  ErrStale,
			wantErr: []string{"revision 1 went from deployed to uninstalled since the plan; plan again"},
		},
		{
			name:    "cancelled before applying",
			cancel:  true,
			wantIs:  context.Canceled,
			wantErr: []string{"apply cancelled, nothing was written"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.seed(t)
			rendered := f.plan(t, render.Options{})
			if tt.after != nil {
				tt.after(t, f)
			}
			kube0, store0 := f.writes()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				cancel()
			}
			req := f.request(t, rendered)
			req.Recreate = tt.recreate
			var out bytes.Buffer
			rel, err := apply(ctx, req, &out, noCluster(t))
			if err == nil {
				t.Fatalf("apply succeeded (revision %d)", rel.Version)
			}
			if !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v is not %v", err, tt.wantIs)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if kube1, store1 := f.writes(); kube1 != kube0 || store1 != store0 {
				t.Errorf("writes: kube %d→%d, storage %d→%d", kube0, kube1, store0, store1)
			}
			if out.Len() > 0 {
				t.Errorf("printed %q", out.String())
			}
		})
	}
}

// TestApplyCancelledWhileHelmRenders cancels once Helm's action started
// (after Apply's own checks) but before it stored anything.
func TestApplyCancelledWhileHelmRenders(t *testing.T) {
	f := newFixture(t)
	f.seed(t)
	rendered := f.plan(t, render.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.kube.onReachable = cancel
	kube0, store0 := f.writes()
	_, err := apply(ctx, f.request(t, rendered), io.Discard, noCluster(t))
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "Helm stopped before storing revision 2") {
		t.Fatalf("error = %v", err)
	}
	if kube1, store1 := f.writes(); kube1 != kube0 || store1 != store0 {
		t.Errorf("writes: kube %d→%d, storage %d→%d", kube0, kube1, store0, store1)
	}
}

func TestApplyReportsReleaseState(t *testing.T) {
	tests := []struct {
		name          string
		atomic        bool
		wantAttempted release.Status
		wantLast      int
		wantLastSt    release.Status
		wantErr       string
	}{
		{name: "failed", wantAttempted: release.StatusFailed, wantLast: 2, wantLastSt: release.StatusFailed,
			wantErr: "the release is now failed at revision 2"},
		{name: "atomic rolls back", atomic: true, wantAttempted: release.StatusFailed, wantLast: 3, wantLastSt: release.StatusDeployed,
			wantErr: "has been rolled back due to atomic being set: cannot patch \"app-config\" with kind ConfigMap: boom; revision 2 is failed; the release is now deployed at revision 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.seed(t)
			rendered := f.plan(t, render.Options{})
			f.kube.updateErr = errors.New(`cannot patch "app-config" with kind ConfigMap: boom`)
			req := f.request(t, rendered)
			req.Render.Atomic = tt.atomic
			_, err := apply(context.Background(), req, io.Discard, noCluster(t))
			var ue *UpgradeError
			if !errors.As(err, &ue) {
				t.Fatalf("error %v is not an *UpgradeError", err)
			}
			if ue.Attempted != 2 || ue.AttemptedStatus != tt.wantAttempted || ue.Last != tt.wantLast || ue.LastStatus != tt.wantLastSt {
				t.Errorf("state = %+v", ue)
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "boom") {
				t.Errorf("error %q does not say %q", err, tt.wantErr)
			}
		})
	}
}

// TestApplyCancelledAfterDeleteRestores cancels (as SIGINT does) once the
// recreate step deleted an object: Helm stores nothing, the object is put
// back from the journal, and the error says what was deleted and restored.
func TestApplyCancelledAfterDeleteRestores(t *testing.T) {
	f := newFixture(t)
	f.seed(t)
	rendered := f.plan(t, render.Options{})
	fc := newFakeCluster(t)
	configMaps := fc.client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(relNS)
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetName("app-config")
	cm.SetNamespace(relNS)
	cm.SetUID("cm-uid")
	cm.SetLabels(map[string]string{"keep": "me"})
	cm.Object["data"] = map[string]interface{}{"message": "hello"} // as deployed
	if _, err := configMaps.Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fc.client.PrependReactor("delete", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if len(a.(clienttesting.DeleteActionImpl).DeleteOptions.DryRun) == 0 {
			cancel()
		}
		return false, nil, nil
	})
	req := f.request(t, rendered)
	req.Recreate = []plan.Change{recreateChange("", "ConfigMap", relNS, "app-config")}
	var out bytes.Buffer
	_, err := apply(ctx, req, &out, func(action.RESTClientGetter) (*live.Cluster, error) { return fc.Cluster, nil })
	if ctx.Err() == nil {
		t.Fatalf("the recreate did not delete the ConfigMap: %v", err)
	}
	for _, want := range []string{
		"Helm stopped before storing revision 2", "context canceled",
		"safe-upgrade deleted ConfigMap/demo/app-config for recreation; restored from the recreate journal: ConfigMap/demo/app-config re-created with its previous spec",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
	got, gerr := configMaps.Get(context.Background(), "app-config", metav1.GetOptions{})
	if gerr != nil || got.GetLabels()["keep"] != "me" {
		t.Errorf("the ConfigMap was not restored as it was: %v %v", gerr, got)
	}
	if _, err := f.cfg.Releases.Get(relName, 2); err == nil {
		t.Error("revision 2 was stored")
	}
	assertNoJournal(t, fc)
}

// TestApplyUpgradeFailsAfterRecreate: Helm fails after the recreate; the
// object is restored, the journal removed, and both the error and the
// failed revision's description (helm history) say so.
func TestApplyUpgradeFailsAfterRecreate(t *testing.T) {
	for _, atomic := range []bool{false, true} {
		t.Run(fmt.Sprintf("atomic=%v", atomic), func(t *testing.T) {
			f := newFixture(t)
			f.seed(t)
			rendered := f.plan(t, render.Options{})
			fc := newFakeCluster(t)
			f.kube.updateErr = errors.New("pre-upgrade hooks failed: boom")
			req := f.request(t, rendered)
			req.Render.Atomic = atomic
			req.Recreate = []plan.Change{recreateChange("apps", "StatefulSet", relNS, "app-db")}
			rendered.Next.Manifest += plannedObjects
			var out bytes.Buffer
			_, err := apply(context.Background(), req, &out, func(action.RESTClientGetter) (*live.Cluster, error) { return fc.Cluster, nil })
			var ue *UpgradeError
			if !errors.As(err, &ue) {
				t.Fatalf("error %v is not an *UpgradeError", err)
			}
			want := "safe-upgrade deleted StatefulSet.apps/demo/app-db for recreation; restored from the recreate journal: StatefulSet.apps/demo/app-db re-created with its previous spec"
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "boom") {
				t.Errorf("error %q does not say %q", err, want)
			}
			failed, gerr := f.cfg.Releases.Get(relName, 2)
			// The tool's line first: helm history's table shows one cut line.
			if gerr != nil || failed.Info.Status != release.StatusFailed || !strings.HasPrefix(failed.Info.Description, want) {
				t.Errorf("revision 2: %v %+v", gerr, failed)
			}
			sts := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
			got, gerr := fc.client.Resource(sts).Namespace(relNS).Get(context.Background(), "app-db", metav1.GetOptions{})
			if gerr != nil {
				t.Fatalf("the StatefulSet was not restored: %v", gerr)
			}
			if size, _, _ := unstructured.NestedSlice(got.Object, "spec", "volumeClaimTemplates"); fmt.Sprint(size) != "[map[metadata:map[name:data] spec:map[resources:map[requests:map[storage:1Gi]]]]]" {
				t.Errorf("restored claim templates %v, want the old ones", size)
			}
			assertNoJournal(t, fc)
		})
	}
}

// TestApplyRecreateRefusedBeforeAnyDelete: when the journal cannot be
// written (RBAC), or the live object differs from the deployed revision at
// a field the chart sets (its journal entry would be refused by
// --recover), nothing is deleted, and the output does not first describe
// a delete that never happens.
func TestApplyRecreateRefusedBeforeAnyDelete(t *testing.T) {
	tests := []struct {
		name    string
		cluster func(t *testing.T, fc *fakeCluster)
		want    string
	}{
		{"journal forbidden", func(t *testing.T, fc *fakeCluster) {
			fc.client.PrependReactor("create", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(live.SecretsGVR.GroupResource(), releasestate.JournalName(relName), errors.New("RBAC"))
			})
		}, "writing the recreate journal Secret demo/safe-upgrade-journal.app: secrets \"safe-upgrade-journal.app\" is forbidden: RBAC; nothing was deleted and the Helm upgrade was not started"},
		{"live object drifted at a field the chart sets", func(t *testing.T, fc *fakeCluster) {
			sts := fc.client.Resource(stsGVR).Namespace(relNS)
			live, err := sts.Get(context.Background(), "app-db", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_ = unstructured.SetNestedField(live.Object, map[string]interface{}{"app": "edited"}, "spec", "selector", "matchLabels")
			if _, err := sts.Update(context.Background(), live, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, "StatefulSet.apps/demo/app-db: recreate refused: its journal entry would not pass the checks of a restore (it differs from the deployed revision 1 at spec.selector.matchLabels.app, which the chart sets); nothing was deleted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.seed(t)
			rendered := f.plan(t, render.Options{})
			rendered.Next.Manifest += plannedObjects
			fc := newFakeCluster(t)
			tt.cluster(t, fc)
			req := f.request(t, rendered)
			req.Recreate = []plan.Change{recreateChange("apps", "StatefulSet", relNS, "app-db")}
			var out bytes.Buffer
			_, err := apply(context.Background(), req, &out, func(action.RESTClientGetter) (*live.Cluster, error) { return fc.Cluster, nil })
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if strings.Contains(out.String(), "deleted with") {
				t.Errorf("the output describes a delete that did not happen:\n%s", out.String())
			}
			for _, d := range fc.deletes {
				if len(d.DeleteOptions.DryRun) == 0 {
					t.Errorf("deleted %s", d.Name)
				}
			}
		})
	}
}

// TestApplyRefusesWithLeftoverJournal: an interrupted apply's journal
// stops the next apply before anything is written.
func TestApplyRefusesWithLeftoverJournal(t *testing.T) {
	f := newFixture(t)
	f.seed(t)
	rendered := f.plan(t, render.Options{})
	fc := newFakeCluster(t)
	writeJournal(t, fc, releasestate.StepUpgrading, true)
	req := f.request(t, rendered)
	req.Recreate = []plan.Change{recreateChange("apps", "StatefulSet", relNS, "app-db")}
	rendered.Next.Manifest += plannedObjects
	kube0, store0 := f.writes()
	_, err := apply(context.Background(), req, io.Discard, func(action.RESTClientGetter) (*live.Cluster, error) { return fc.Cluster, nil })
	var je *releasestate.JournalError
	if !errors.As(err, &je) || !strings.Contains(err.Error(), "--recover") || !strings.Contains(err.Error(), "StatefulSet.apps/demo/app-db") {
		t.Fatalf("error %v, want a *releasestate.JournalError naming --recover and the object", err)
	}
	if kube1, store1 := f.writes(); kube1 != kube0 || store1 != store0 || len(fc.deletes) > 0 {
		t.Errorf("writes: kube %d→%d, storage %d→%d, deletes %v", kube0, kube1, store0, store1, fc.deletes)
	}
}

// TestApplyStaleAfterDeletesSaysSo: the release moves while the recreate
// deletes (another upgrade lands): the apply is refused as stale, and the
// error does not pretend nothing was written: it names the delete and the
// restore.
func TestApplyStaleAfterDeletesSaysSo(t *testing.T) {
	f := newFixture(t)
	f.seed(t)
	rendered := f.plan(t, render.Options{})
	rendered.Next.Manifest += plannedObjects
	fc := newFakeCluster(t)
	fc.client.PrependReactor("delete", "statefulsets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if len(a.(clienttesting.DeleteActionImpl).DeleteOptions.DryRun) == 0 {
			helmtest.NextRevision(t, f.cfg, relName, release.StatusDeployed)
		}
		return false, nil, nil
	})
	req := f.request(t, rendered)
	req.Recreate = []plan.Change{recreateChange("apps", "StatefulSet", relNS, "app-db")}
	_, err := apply(context.Background(), req, io.Discard, func(action.RESTClientGetter) (*live.Cluster, error) { return fc.Cluster, nil })
	if !errors.Is(err, ErrStale) {
		t.Fatalf("error %v is not stale", err)
	}
	msg := err.Error()
	if strings.Contains(strings.ToLower(msg), "nothing was written") ||
		!strings.Contains(msg, "safe-upgrade deleted StatefulSet.apps/demo/app-db for recreation; restored from the recreate journal: StatefulSet.apps/demo/app-db re-created with its previous spec") {
		t.Errorf("error %q does not say what was deleted and restored", msg)
	}
	if !fc.exists(t, stsGVR, "app-db") {
		t.Error("the StatefulSet was not restored")
	}
	assertNoJournal(t, fc)
}

// TestApplySanitizesServerMessages: an API server error echoing a Secret
// value (as an admission policy's messageExpression can) reaches neither
// Apply's error, nor Helm's log, nor the release description Helm stores.
func TestApplySanitizesServerMessages(t *testing.T) {
	const pw = "hunter2-from-admission"
	echoed := base64.StdEncoding.EncodeToString([]byte(pw))
	for _, atomic := range []bool{false, true} {
		f := newFixture(t)
		f.seed(t)
		rendered := f.plan(t, render.Options{})
		f.kube.updateErr = errors.New(`admission webhook denied: bad password: ` + echoed + ` (` + pw + `)`)
		var logged strings.Builder
		f.cfg.Log = func(format string, args ...interface{}) { fmt.Fprintf(&logged, format+"\n", args...) }
		req := f.request(t, rendered)
		req.Render.Atomic = atomic
		req.Log = f.cfg.Log
		req.Sanitizer = redact.NewSanitizer(redact.NewMasker())
		req.Sanitizer.AddValue([]byte(pw))
		_, err := Apply(context.Background(), req, io.Discard)
		var ue *UpgradeError
		if !errors.As(err, &ue) {
			t.Fatalf("atomic=%v: error %v is not an *UpgradeError", atomic, err)
		}
		hist, herr := f.cfg.Releases.History(relName)
		if herr != nil {
			t.Fatal(herr)
		}
		texts := map[string]string{"error": err.Error(), "log": logged.String()}
		for _, r := range hist {
			texts[fmt.Sprintf("revision %d description", r.Version)] = r.Info.Description
		}
		if !strings.Contains(texts["revision 2 description"], "(sensitive: hmac-sha256:") {
			t.Errorf("atomic=%v: the failed revision's description %q does not show the value masked", atomic, texts["revision 2 description"])
		}
		for what, text := range texts {
			if strings.Contains(text, pw) || strings.Contains(text, echoed) {
				t.Errorf("atomic=%v: %s holds the Secret value: %q", atomic, what, text)
			}
		}
	}
}
