package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fatih/color"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/golden"
)

// assertGolden compares got with testdata/output/name, or rewrites the file
// with -update.
func assertGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Assert(t, filepath.Join("testdata", "output", name), got)
}

func write(t testing.TB, p *plan.Plan, opts Options) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, p, opts); err != nil {
		t.Fatalf("Write(%+v): %v", opts, err)
	}
	return b.String()
}

// offlineInstallPlan is a first install planned without a cluster.
func offlineInstallPlan() *plan.Plan {
	return &plan.Plan{
		Release: plan.Release{Name: "shop", Namespace: "shop", Revision: 1, Chart: "shop-2.0.0", Operation: plan.OperationInstall},
		Offline: true,
		Changes: []plan.Change{{
			ID: id("", "Service", "web-public"), APIVersion: "v1", Action: plan.ActionCreate, After: service(),
		}},
	}
}

// uninstallPlan is an uninstall: a claim whose data goes (data-loss,
// not acknowledged), a ConfigMap a re-install brings back (recreatable),
// and what stays in the notes.
func uninstallPlan() *plan.Plan {
	lost := plan.Change{ID: id("", "PersistentVolumeClaim", "uploads"), APIVersion: "v1", Action: plan.ActionDelete, Class: plan.ClassDataLoss,
		Destructive: true, Before: pvc(), Reasons: []plan.Reason{
			{Message: "uninstalled with the release: Helm deletes it (no helm.sh/resource-policy: keep); deleting a PersistentVolumeClaim deletes its volume's data (reclaimPolicy Delete)", Source: plan.SourceHelm},
			{Path: "spec.volumeName", Message: "the claim holds 5Gi; PersistentVolume pvc-1 has reclaimPolicy Delete: its storage and data are deleted", Source: plan.SourceServer},
		}}
	lost.Fingerprint = plan.Fingerprint(lost)
	return &plan.Plan{
		Release:       plan.Release{Name: "shop", Namespace: "shop", Revision: 4, CurrentRevision: 4, Chart: "shop-2.0.0", Operation: plan.OperationUninstall},
		ServerVersion: "v1.37.2",
		Changes: []plan.Change{lost, {ID: id("", "ConfigMap", "web-config"), APIVersion: "v1", Action: plan.ActionDelete, Class: plan.ClassRecreatable,
			Before: configMap("info"), Reasons: []plan.Reason{{Message: "uninstalled with the release: Helm deletes it", Source: plan.SourceHelm}}}},
		Notes: []string{
			"left in the cluster: ConfigMap/shop/settings: helm.sh/resource-policy: keep",
			"left in the cluster: PersistentVolumeClaim/shop/data-db-0 (1Gi): made from StatefulSet.apps/shop/db's volumeClaimTemplates, which helm uninstall never deletes",
		},
	}
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		plan   *plan.Plan
		opts   Options
	}{
		{"plan.txt", fixturePlan(), Options{}},
		{"plan.json", fixturePlan(), Options{Format: FormatJSON}},
		{"plan.md", fixturePlan(), Options{Format: FormatMarkdown}},
		{"offline-install.txt", offlineInstallPlan(), Options{}},
		{"offline-install.json", offlineInstallPlan(), Options{Format: FormatJSON}},
		{"offline-install.md", offlineInstallPlan(), Options{Format: FormatMarkdown}},
		{"rollback.txt", rollbackPlan(), Options{}},
		{"rollback.json", rollbackPlan(), Options{Format: FormatJSON}},
		{"rollback.md", rollbackPlan(), Options{Format: FormatMarkdown}},
		{"uninstall.txt", uninstallPlan(), Options{}},
		{"uninstall.json", uninstallPlan(), Options{Format: FormatJSON}},
		{"uninstall.md", uninstallPlan(), Options{Format: FormatMarkdown}},
		{"uninstalled.json", uninstalledPlan(), Options{Format: FormatJSON}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			assertGolden(t, tc.golden, []byte(write(t, tc.plan, tc.opts)))
		})
	}
}

func TestSummaryLine(t *testing.T) {
	change := func(a plan.Action, c plan.Class, destructive bool) plan.Change {
		return plan.Change{Action: a, Class: c, Destructive: destructive}
	}
	for _, tc := range []struct {
		name    string
		changes []plan.Change
		want    string
	}{
		{"empty", nil,
			"Plan: 0 to create, 0 in-place, 0 rolling, 0 recreate-required, 0 to delete"},
		{"noops are not counted", []plan.Change{change(plan.ActionNoop, plan.ClassNone, false)},
			"Plan: 0 to create, 0 in-place, 0 rolling, 0 recreate-required, 0 to delete"},
		{"the guide's example", []plan.Change{
			change(plan.ActionCreate, plan.ClassNone, false),
			change(plan.ActionUpdate, plan.ClassInPlace, false),
			change(plan.ActionUpdate, plan.ClassInPlace, false),
			change(plan.ActionUpdate, plan.ClassRolling, false),
			change(plan.ActionUpdate, plan.ClassRecreateRequired, true),
		}, "Plan: 1 to create, 2 in-place, 1 rolling, 1 recreate-required (destructive), 0 to delete"},
		{"invalid shown when present", []plan.Change{
			change(plan.ActionUpdate, plan.ClassInvalid, true),
			change(plan.ActionUpdate, plan.ClassInvalid, true),
		}, "Plan: 0 to create, 0 in-place, 0 rolling, 0 recreate-required, 2 invalid (destructive), 0 to delete"},
		{"destructive marks only its bucket", []plan.Change{
			change(plan.ActionDelete, plan.ClassNone, false),
			change(plan.ActionDelete, plan.ClassNone, true),
			change(plan.ActionUpdate, plan.ClassRecreateRequired, false),
		}, "Plan: 0 to create, 0 in-place, 0 rolling, 1 recreate-required, 2 to delete (destructive)"},
		{"destructive create (rename)", []plan.Change{
			change(plan.ActionCreate, plan.ClassNone, true),
			change(plan.ActionDelete, plan.ClassNone, true),
		}, "Plan: 1 to create (destructive), 0 in-place, 0 rolling, 0 recreate-required, 1 to delete (destructive)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SummaryLine(&plan.Plan{Changes: tc.changes}); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestTextSummaryIsFirstLine(t *testing.T) {
	p := fixturePlan()
	out := write(t, p, Options{})
	if first, _, _ := strings.Cut(out, "\n"); first != SummaryLine(p) {
		t.Errorf("first line %q, want the summary %q", first, SummaryLine(p))
	}
}

func TestColor(t *testing.T) {
	// The package-global switch must not decide either way.
	defer func(saved bool) { color.NoColor = saved }(color.NoColor)
	for _, global := range []bool{true, false} {
		color.NoColor = global
		plain := write(t, fixturePlan(), Options{Color: false})
		if strings.Contains(plain, "\x1b[") {
			t.Errorf("Color=false (global NoColor=%v): output has ANSI escapes", global)
		}
		coloured := write(t, fixturePlan(), Options{Color: true})
		for _, esc := range []string{"\x1b[31m", "\x1b[33m", "\x1b[32m"} { // red, yellow, green
			if !strings.Contains(coloured, esc) {
				t.Errorf("Color=true (global NoColor=%v): no %q in output", global, esc)
			}
		}
	}
	// JSON and Markdown are never coloured.
	for _, f := range []string{FormatJSON, FormatMarkdown} {
		if out := write(t, fixturePlan(), Options{Format: f, Color: true}); strings.Contains(out, "\x1b[") {
			t.Errorf("%s with Color=true has ANSI escapes", f)
		}
	}
}

func TestNoSecretValues(t *testing.T) {
	p := fixturePlan()
	// A Secret the masking stage missed: raw base64 data and a
	// last-applied annotation carrying it again.
	raw := secret("c3VwZXItc2VjcmV0LXZhbHVl") // "super-secret-value"
	annotations := map[string]interface{}{
		redact.LastAppliedAnnotation: `{"data":{"password":"c3VwZXItc2VjcmV0LXZhbHVl"}}`,
	}
	raw.Object["metadata"].(map[string]interface{})["annotations"] = annotations
	raw.Object["stringData"] = map[string]interface{}{"token": "plain-token-value"}
	p.Changes = append(p.Changes, plan.Change{
		ID: manifest.ObjectID{Kind: "Secret", Namespace: "shop", Name: "leaky"}, APIVersion: "v1",
		Action: plan.ActionCreate, After: raw,
	})
	// Any object's last-applied annotation, as pkg/redact masks it.
	cm := configMap("warn")
	cm.SetAnnotations(map[string]string{redact.LastAppliedAnnotation: `{"data":{"LOG_LEVEL":"last-applied-copy"}}`})
	p.Changes = append(p.Changes, plan.Change{
		ID: id("", "ConfigMap", "annotated"), APIVersion: "v1", Action: plan.ActionCreate, After: cm,
	})
	for _, f := range []string{FormatText, FormatJSON, FormatMarkdown} {
		// The created objects' manifests too (-p).
		out := write(t, p, Options{Format: f, WholeObjects: true})
		for _, leak := range []string{secretValue, "c3VwZXItc2VjcmV0LXZhbHVl", "plain-token-value", "last-applied-copy"} {
			if strings.Contains(out, leak) {
				t.Errorf("%s output contains %q", f, leak)
			}
		}
		// The planner's keyed markers are kept; what the guard masks gets
		// the unkeyed marker (it has no key); no marker tells a length.
		for _, want := range []string{"(sensitive)", "(sensitive: hmac-sha256:1a2b3c4d1a2b3c4d)"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s output lacks the marker %q", f, want)
			}
		}
		if strings.Contains(out, "bytes") {
			t.Errorf("%s output tells the length of a value", f)
		}
	}
	// The plan itself is left alone.
	if got := raw.Object["data"].(map[string]interface{})["password"]; got != "c3VwZXItc2VjcmV0LXZhbHVl" {
		t.Errorf("masking modified the plan: password is %v", got)
	}
	if got := annotations[redact.LastAppliedAnnotation]; !strings.Contains(got.(string), "c3VwZXI") {
		t.Errorf("masking modified the plan: annotation is %v", got)
	}
}

func TestContext(t *testing.T) {
	c := &fixturePlan().Changes[2] // Deployment web: one changed line
	for _, tc := range []struct {
		context, wantContext int
	}{{0, 3}, {NoContext, 0}, {-7, 0}, {1, 1}, {2, 2}} {
		d, err := unifiedDiff(c, Options{Context: tc.context}.withDefaults().Context, sides{"live", "predicted"})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, line := range strings.Split(d, "\n") {
			if strings.HasPrefix(line, " ") {
				n++
			}
		}
		if n != 2*tc.wantContext {
			t.Errorf("Context %d: %d context lines, want %d:\n%s", tc.context, n, 2*tc.wantContext, d)
		}
	}
}

func TestDiffHeadersAndNoops(t *testing.T) {
	p := fixturePlan()
	out := write(t, p, Options{WholeObjects: true})
	for _, want := range []string{
		"--- live/StatefulSet/shop/postgres\n+++ predicted/StatefulSet/shop/postgres\n",
		"--- live/Service/shop/web-public\n+++ predicted/Service/shop/web-public\n",
		"--- live/PersistentVolumeClaim/shop/uploads\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q", want)
		}
	}
	// Without -p (issue 54), the created and deleted objects' manifests
	// are left out, and a line says so; the updates' diffs are there.
	for _, f := range []string{FormatText, FormatMarkdown} {
		short := write(t, p, Options{Format: f})
		for _, absent := range []string{"web-public\n", "uploads\n"} {
			if strings.Contains(short, "predicted/Service/shop/"+absent) || strings.Contains(short, "live/PersistentVolumeClaim/shop/"+absent) {
				t.Errorf("%s output without -p shows the manifest of %s", f, absent)
			}
		}
		for _, want := range []string{"Manifests of the 1 object to create and the 1 object to delete not shown (the table names them): -p/--diff shows them.", "StatefulSet/shop/postgres"} {
			if !strings.Contains(short, want) {
				t.Errorf("%s output without -p lacks %q", f, want)
			}
		}
	}
	for _, absent := range []string{"ServiceAccount", "live/Deployment/shop/worker"} {
		if strings.Contains(out, absent) {
			t.Errorf("text output shows %q (a noop, or an update without prediction)", absent)
		}
	}
	if !strings.Contains(out, "1 object unchanged") {
		t.Error("text output does not count the noop")
	}
}

func TestWriteErrors(t *testing.T) {
	if err := Write(&bytes.Buffer{}, fixturePlan(), Options{Format: "yaml"}); err == nil || !strings.Contains(err.Error(), `"yaml"`) {
		t.Errorf("unknown format: err = %v", err)
	}
	if err := Write(&bytes.Buffer{}, nil, Options{}); err == nil {
		t.Error("nil plan: no error")
	}
}

// TestNoSecretValuesWhateverTheShape: the guard masks the data of Secrets
// whose kind is not spelled "Secret" or whose group is not core, and of
// objects whose data cannot be told apart from a Secret's.
func TestNoSecretValuesWhateverTheShape(t *testing.T) {
	const leak = "shape-canary-value"
	for _, tt := range []struct{ apiVersion, kind, field string }{
		{"v1", "secret", "stringData"},
		{"v1", "SECRET", "data"},
		{"example.com/v1", "Secret", "data"},
		{"v1", "Sekret", "data"},
		{"v1", "configmap", "data"},
	} {
		p := fixturePlan()
		p.Changes = append(p.Changes, plan.Change{
			ID: manifest.ObjectID{Kind: tt.kind, Namespace: "shop", Name: "odd"}, APIVersion: tt.apiVersion,
			Action: plan.ActionCreate, After: obj(map[string]interface{}{
				"apiVersion": tt.apiVersion, "kind": tt.kind, "metadata": meta("odd", "shop"),
				tt.field: map[string]interface{}{"pw": leak},
			}),
		})
		for _, f := range []string{FormatText, FormatJSON, FormatMarkdown} {
			if out := write(t, p, Options{Format: f}); strings.Contains(out, leak) {
				t.Errorf("%s %s: %s output contains the value", tt.apiVersion, tt.kind, f)
			}
		}
	}
}

// TestHideSecrets: with --hide-secret a Secret keeps its verdict but shows
// no content, not even masked; other objects keep their diffs.
func TestHideSecrets(t *testing.T) {
	for _, f := range []string{FormatText, FormatJSON, FormatMarkdown} {
		t.Run(f, func(t *testing.T) {
			p := fixturePlan()
			shown := write(t, p, Options{Format: f})
			hidden := write(t, p, Options{Format: f, HideSecrets: true})
			if !strings.Contains(shown, "(sensitive:") {
				t.Fatalf("the fixture has no masked Secret value:\n%s", shown)
			}
			if strings.Contains(hidden, "(sensitive:") || !strings.Contains(hidden, hiddenSecretNote) {
				t.Errorf("Secret contents shown with HideSecrets:\n%s", hidden)
			}
			if !strings.Contains(hidden, "db-credentials") || !strings.Contains(hidden, "LOG_LEVEL") {
				t.Errorf("HideSecrets hid more than the Secrets' contents:\n%s", hidden)
			}
			if write(t, p, Options{Format: f}) != shown {
				t.Error("HideSecrets changed the plan it was given")
			}
		})
	}
}

// TestRegenerated: a change of regenerated fields only is shown, labelled,
// and counted apart from the classes.
func TestRegenerated(t *testing.T) {
	p := offlineInstallPlan()
	p.Changes = append(p.Changes, plan.Change{
		ID: id("", "Secret", "db-password"), APIVersion: "v1", Action: plan.ActionUpdate, Class: plan.ClassInPlace, Regenerated: true,
		Reasons: []plan.Reason{{Path: "data.password", Message: "changed", Source: plan.SourceServer, Regenerated: true}},
	})
	for f, want := range map[string][]string{
		FormatText:     {"0 in-place", "1 regenerated", "data.password: changed (regenerated on every render)"},
		FormatMarkdown: {"1 regenerated", "(regenerated on every render)"},
		FormatJSON:     {`"regenerated": 1`, `"regenerated": true`},
	} {
		out := write(t, p, Options{Format: f})
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s output lacks %q:\n%s", f, w, out)
			}
		}
	}
	if strings.Contains(SummaryLine(offlineInstallPlan()), "regenerated") {
		t.Error("an empty regenerated bucket is listed")
	}
}

// TestDriftTextSSA: under server-side apply a drifted field another manager
// owns is kept, or taken back only with --force-conflicts.
func TestDriftTextSSA(t *testing.T) {
	for d, want := range map[plan.Drift]string{
		{Path: "data.key", Manager: "someone-else"}:                 "owned by field manager someone-else, which this server-side apply keeps",
		{Path: "data.key", Manager: "someone-else", Reverted: true}: "takes it back (--force-conflicts) and reverts it",
		{Path: "data.key", Reverted: true}:                          "this upgrade reverts it",
		{Path: "data.key"}:                                          "this upgrade keeps the live value",
	} {
		if got := driftText(d); !strings.Contains(got, want) || !strings.HasPrefix(got, "data.key differs") {
			t.Errorf("driftText(%+v) = %q, want %q", d, got, want)
		}
	}
}

func TestReleaseLineApplyMethod(t *testing.T) {
	p := &plan.Plan{Release: plan.Release{Name: "r", Namespace: "h4", Revision: 2, CurrentRevision: 1, Chart: "r-1.0.0", ApplyMethod: plan.ApplyMethodSSA, ForceConflicts: true}}
	if got, want := releaseLine(p), "Release r in namespace h4: revision 1 -> 2, chart r-1.0.0, server-side apply (Helm 4) with --force-conflicts"; got != want {
		t.Errorf("releaseLine = %q, want %q", got, want)
	}
	p.Release.ApplyMethod = plan.ApplyMethodCSA
	if got := releaseLine(p); strings.Contains(got, "server-side") {
		t.Errorf("client-side release: %q", got)
	}
}

// TestReleaseLineSynced: a release a GitOps controller applies is named
// with it, and with no Helm revision; its apply method as it applies.
func TestReleaseLineSynced(t *testing.T) {
	for _, tc := range []struct {
		name string
		rel  plan.Release
		want string
	}{
		{"client-side", plan.Release{ApplyMethod: plan.ApplyMethodCSA}, ", client-side apply"},
		{"server-side", plan.Release{ApplyMethod: plan.ApplyMethodSSA, ForceConflicts: true}, ", server-side apply forcing conflicts"},
		{"replace", plan.Release{ApplyMethod: plan.ApplyMethodCSA, ForceReplace: true}, ", replaced with PUT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.rel.Name, tc.rel.Namespace, tc.rel.Chart, tc.rel.SyncedBy = "store", "shop", "web-1.0.0", "Argo CD Application argocd/store"
			want := "Release store in namespace shop: head render synced by Argo CD Application argocd/store (no Helm revision), chart web-1.0.0" + tc.want
			if got := releaseLine(&plan.Plan{Release: tc.rel}); got != want {
				t.Errorf("releaseLine = %q, want %q", got, want)
			}
		})
	}
}

// TestDerivedMarked: every format says which verdicts the server confirmed
// and which were derived without a dry-run.
func TestDerivedMarked(t *testing.T) {
	p := offlineInstallPlan()
	p.Offline = false
	p.Changes = append(p.Changes, plan.Change{
		ID: id("", "ServiceAccount", "worker"), APIVersion: "v1", Action: plan.ActionUpdate, Class: plan.ClassInPlace,
		Prediction: plan.PredictionDerived,
		Reasons:    []plan.Reason{{Path: "metadata.labels.helm.sh/chart", Message: "changed", Source: plan.SourceDerived}},
	}, plan.Change{
		ID: id("", "ConfigMap", "settings"), APIVersion: "v1", Action: plan.ActionUpdate, Class: plan.ClassInPlace,
		Prediction: plan.PredictionServer,
		Reasons:    []plan.Reason{{Path: "data.mode", Message: "changed", Source: plan.SourceServer}},
	})
	for f, want := range map[string][]string{
		// What derived means, for any change derived (issue 54: not
		// "metadata-only", said of a Deployment's image change).
		FormatText: {"metadata.labels.helm.sh/chart: changed (source: derived)",
			"1 verdict derived without a server dry-run (source: derived): the tool computed the API server's answer to its change, which no admission webhook or policy sees; --server-dry-run=all asks the server instead."},
		FormatMarkdown: {"changed (source: derived)", "1 verdict derived without a server dry-run"},
		FormatJSON:     {`"prediction": "derived"`, `"prediction": "server"`, `"source": "derived"`},
	} {
		out := write(t, p, Options{Format: f})
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s output lacks %q:\n%s", f, w, out)
			}
		}
	}
	if out := write(t, offlineInstallPlan(), Options{Format: FormatText}); strings.Contains(out, "derived") {
		t.Errorf("a plan without derived verdicts mentions them:\n%s", out)
	}
}

// TestTitlePerOperation: the Markdown report's title names the operation;
// helm upgrade --install's install is an upgrade's plan, as it always was.
func TestTitlePerOperation(t *testing.T) {
	for op, want := range map[plan.Operation]string{
		"": "## Upgrade plan", plan.OperationUpgrade: "## Upgrade plan", plan.OperationInstall: "## Upgrade plan",
		plan.OperationRollback: "## Rollback plan", plan.OperationUninstall: "## Uninstall plan",
	} {
		p := offlineInstallPlan()
		p.Release.Operation = op
		if got := write(t, p, Options{Format: FormatMarkdown}); !strings.HasPrefix(got, want+" for release `shop` in `shop`\n") {
			t.Errorf("%q: title %q, want %q", op, strings.SplitN(got, "\n", 2)[0], want)
		}
	}
}
