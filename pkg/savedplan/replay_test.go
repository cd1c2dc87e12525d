package savedplan

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
)

// TestReplayStart: Start says the plan's origin and takes its mask key
// first, then refuses it in the order the Plan action always did (the
// cluster identity read, the cluster, the flags, the age); without a saved
// plan it reads nothing and says nothing.
func TestReplayStart(t *testing.T) {
	_, opts, s := fixture(t)
	for _, tc := range []struct {
		name     string
		saved    *Plan
		identity func() (ClusterIdentity, error)
		opts     render.Options
		now      time.Time
		op       Op
		want     string // "" for none
	}{
		{name: "no saved plan", identity: func() (ClusterIdentity, error) { t.Fatal("identity read without a saved plan"); return here, nil }},
		{name: "same cluster, flags and time", saved: s, opts: opts, now: planned},
		{name: "identity unread", saved: s, opts: opts, now: planned,
			identity: func() (ClusterIdentity, error) { return ClusterIdentity{}, errors.New("kube-system: forbidden") }, want: "kube-system: forbidden"},
		{name: "another cluster wins over other flags and age", saved: s, opts: render.Options{Namespace: "prod", Atomic: true}, now: planned.Add(48 * time.Hour),
			identity: func() (ClusterIdentity, error) { return ClusterIdentity{Server: "https://elsewhere"}, nil }, want: "made for another cluster"},
		{name: "other flags win over age", saved: s, opts: render.Options{Namespace: "prod", Atomic: true}, now: planned.Add(48 * time.Hour), want: "made with Atomic=false"},
		{name: "too old", saved: s, opts: opts, now: planned.Add(48 * time.Hour), want: "more than --plan-max-age"},
		{name: "another operation wins over the rest", saved: s, opts: render.Options{Atomic: true}, now: planned.Add(48 * time.Hour), op: OpRollback,
			identity: func() (ClusterIdentity, error) {
				t.Fatal("identity read for another operation's plan")
				return here, nil
			}, want: "is of an upgrade, not of a rollback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.identity == nil {
				tc.identity = func() (ClusterIdentity, error) { return here, nil }
			}
			var out bytes.Buffer
			masker := &redact.Masker{Key: []byte("this run's key")}
			r, err := Start(tc.saved, Run{Out: &out, Masker: masker, Identity: tc.identity, Render: tc.opts, Op: tc.op, Now: tc.now, MaxAge: 24 * time.Hour})
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if (r != nil) != (tc.saved != nil && err == nil) {
				t.Fatalf("replay %v with error %v", r, err)
			}
			if tc.saved == nil {
				if out.Len() != 0 || string(masker.Key) != "this run's key" {
					t.Fatalf("without a saved plan: said %q, mask key %q", out.String(), masker.Key)
				}
				return
			}
			if !strings.HasPrefix(out.String(), "Saved plan of release prod/app") || string(masker.Key) != string(s.MaskKey) {
				t.Fatalf("said %q, mask key %q; want the origin and the saved plan's key", out.String(), masker.Key)
			}
		})
	}
}

// TestReplayUseIn: a replay puts the reviewed render in place of a new one
// of the same release, chart and values, and refuses a moved one; a nil
// replay (no saved plan) leaves the render and the plan alone.
func TestReplayUseIn(t *testing.T) {
	p, opts, s := fixture(t)
	ch := &chart.Chart{Metadata: &chart.Metadata{Name: "app", Version: "1.0.0"}}
	rendered := func(last int, c *chart.Chart) *render.Result {
		return &render.Result{Chart: c, Last: &release.Release{Version: last},
			Next: &release.Release{Name: "app", Manifest: "new render", Info: &release.Info{Notes: "new notes"}}}
	}
	var none *Replay
	res := rendered(1, ch)
	if err := none.UseIn(res); err != nil || res.Next.Manifest != "new render" {
		t.Fatalf("no saved plan: %v, manifest %q", err, res.Next.Manifest)
	}
	if err := none.Unmoved(p); err != nil {
		t.Fatalf("no saved plan: %v", err)
	}
	r, err := Start(s, Run{Out: &bytes.Buffer{}, Masker: &redact.Masker{}, Identity: func() (ClusterIdentity, error) { return here, nil }, Render: opts, Now: planned})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		res  *render.Result
		want string
	}{
		{"same release, chart and values", rendered(1, ch), ""},
		{"release moved", rendered(2, ch), "moved from revision 1 to 2"},
		{"chart changed", rendered(1, &chart.Chart{Metadata: ch.Metadata, Raw: []*chart.File{{Name: "values.yaml", Data: []byte("mode: b")}}}), "chart ./app changed"},
		{"another operation", func() *render.Result { res := rendered(1, ch); res.RollbackTo = 1; return res }(), "is of an upgrade, not of a rollback to revision 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := r.UseIn(tc.res)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) || tc.res.Next.Manifest != "new render" {
					t.Fatalf("error %v, manifest %q; want %q and the render left alone", err, tc.res.Next.Manifest, tc.want)
				}
				return
			}
			if err != nil || tc.res.Next.Manifest != s.Manifest || tc.res.Next.Info.Notes != s.Notes || len(tc.res.Next.Hooks) != 1 {
				t.Fatalf("error %v, next %+v; want the saved render", err, tc.res.Next)
			}
		})
	}
	if err := r.Unmoved(p); err != nil {
		t.Fatalf("nothing moved: %v", err)
	}
}
