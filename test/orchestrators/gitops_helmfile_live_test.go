package orchestrators

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/cli"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/chartrepo"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/filetree"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/shimtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// liveChange is what the test reads of a change of a plan.
type liveChange struct {
	Kind, Namespace, Name, Action, Class string
	Destructive                          bool
	Reasons                              []struct{ Source string }
}

// livePlan is what the test reads of a release's plan, or of the note of
// a release that is not planned.
type livePlan struct {
	Object, Note string
	Release      struct{ Operation, Namespace string }
	Changes      []liveChange
	Notes        string
}

// change is the plan's change of kind, or fails the test.
func (p livePlan) change(t *testing.T, kind string) liveChange {
	t.Helper()
	for _, ch := range p.Changes {
		if ch.Kind == kind {
			return ch
		}
	}
	t.Fatalf("no %s in the plan of %s: %+v", kind, p.Object, p.Changes)
	return liveChange{}
}

// shopIn is the release shop of ns among ps, or fails the test.
func shopIn(t *testing.T, ps []livePlan, ns string) livePlan {
	t.Helper()
	for _, p := range ps {
		if p.Object == "HelmfileRelease "+ns+"/shop@default" {
			return p
		}
	}
	t.Fatalf("no release shop of %s among %+v", ns, ps)
	return livePlan{}
}

// gitopsLive runs gitops BASE HEAD --live -o json in process with the real
// helmfile, checks its exit code is want, and returns its releases.
func gitopsLive(t *testing.T, hf, base, head string, want int) []livePlan {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Execute("helm-safe-upgrade", []string{"gitops", base, head, "--live", "-o", "json", "--helmfile", hf},
		iostreams.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, cli.BuildInfo{Version: "v0.0.0-test"})
	var doc struct {
		Releases []struct {
			Object, Note string
			Plan         *struct {
				Release struct{ Operation, Namespace string }
				Changes []liveChange
				Notes   []string
			}
		}
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || code != want {
		t.Fatalf("exit %d, want %d: %v\n%s\n%s", code, want, err, errOut.String(), out.String())
	}
	ps := make([]livePlan, len(doc.Releases))
	for i, r := range doc.Releases {
		ps[i] = livePlan{Object: r.Object, Note: r.Note}
		if r.Plan != nil {
			ps[i].Release, ps[i].Changes, ps[i].Notes = r.Plan.Release, r.Plan.Changes, strings.Join(r.Plan.Notes, "\n")
		}
	}
	return ps
}

// helmReleaseSecrets are the resource versions of the Helm release Secrets
// of release in ns, by name.
func helmReleaseSecrets(t *testing.T, c *testcluster.Cluster, ns, release string) map[string]string {
	t.Helper()
	list, err := c.Clientset(t).CoreV1().Secrets(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + release})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range list.Items {
		out[s.Name] = s.ResourceVersion
	}
	return out
}

// TestGitOpsLiveHelmfile: a helmfile state whose release helm installed is
// planned with --live, helmfile rendering both sides, against the release
// stored in the cluster. The chart bump's claim-template change comes back
// from the API server's dry-run as recreate-required (exit 2). A namespace
// changed in the state is what helmfile apply makes of it: the install in
// the new namespace, the stored release left as it is (helmfile tracks no
// release). Moved the helmfile way (the old entry installed: false), it is
// the live uninstall of the stored release, its StatefulSet's delete data
// loss and the claim its controller made named as left behind, and the
// install (exit 2). Nothing is written; real helmfile sync then does what
// the plans said.
func TestGitOpsLiveHelmfile(t *testing.T) {
	hf := helmfile(t)
	realHelmOnPath(t)
	c := testcluster.Get(t)
	t.Setenv("KUBECONFIG", c.Kubeconfig)
	ns, moved := c.Namespace(t), c.Namespace(t)
	demo := filepath.Join(c.Root, "testdata/charts/demo")
	url, _ := chartrepo.Serve(t, demo, filepath.Join(c.Root, "testdata/charts/demo-v2"))
	c.Helm(t, "install", "shop", demo, "-n", ns)
	pods, claims := shimtest.WaitForDB(t, c, ns)
	before, secrets := shimtest.DemoState(t, c, ns, "shop"), helmReleaseSecrets(t, c, ns, "shop")
	events := len(c.AuditEvents(t, nil))
	release := func(namespace, version, extra string) string {
		return "  - name: shop\n    namespace: " + namespace + "\n    chart: charts/demo\n    version: " + version + "\n" + extra
	}
	state := func(releases ...string) string {
		return filetree.Write(t, map[string]string{"helmfile.yaml": "repositories:\n  - name: charts\n    url: " + url + "\nreleases:\n" + strings.Join(releases, "")})
	}
	base := state(release(ns, "1.0.0", ""))

	// The chart bump: the upgrade of the stored release.
	ps := gitopsLive(t, hf, base, state(release(ns, "2.0.0", "")), 2)
	if len(ps) != 1 {
		t.Fatalf("chart bump: %+v, want the upgrade alone", ps)
	}
	if p := shopIn(t, ps, ns); p.Release.Operation != "upgrade" || p.Release.Namespace != ns || !strings.Contains(p.Notes, "--live: planned against release shop as stored in namespace "+ns) {
		t.Errorf("release %+v, notes:\n%s\nwant the upgrade of the stored release, said to be planned live", p.Release, p.Notes)
	}
	if sts := ps[0].change(t, "StatefulSet"); sts.Class != "recreate-required" || !sts.Destructive || len(sts.Reasons) == 0 || sts.Reasons[0].Source != "server" {
		t.Errorf("StatefulSet %s: %s destructive %v reasons %+v, want recreate-required from the server's dry-run", sts.Name, sts.Class, sts.Destructive, sts.Reasons)
	}

	// The namespace changed: helmfile installs there, leaves the stored one.
	renamed := state(release(moved, "1.0.0", ""))
	ps = gitopsLive(t, hf, base, renamed, 0)
	if len(ps) != 2 || shopIn(t, ps, ns).Note != "no longer in the head's helmfile state (environment default): helmfile leaves release shop in namespace "+ns+" as it is (it uninstalls only a release marked installed: false)" {
		t.Fatalf("namespace changed: %+v, want the stored release left as it is, and the install", ps)
	}
	if p := shopIn(t, ps, moved); p.Release.Operation != "install" || p.Release.Namespace != moved || p.change(t, "StatefulSet").Action != "create" || !strings.Contains(p.Notes, "--live: no release shop is stored in namespace "+moved+": planned as its install") {
		t.Errorf("namespace changed: %+v, want the install into %s, planned live", p, moved)
	}

	// Moved the helmfile way: the stored release's uninstall and the install.
	movedState := state(release(ns, "1.0.0", "    installed: false\n"), release(moved, "1.0.0", ""))
	ps = gitopsLive(t, hf, base, movedState, 2)
	if len(ps) != 2 {
		t.Fatalf("namespace move: %+v, want the uninstall and the install", ps)
	}
	un, install := shopIn(t, ps, ns), shopIn(t, ps, moved)
	if del := un.change(t, "StatefulSet"); un.Release.Operation != "uninstall" || un.Release.Namespace != ns || del.Action != "delete" || del.Class != "data-loss" {
		t.Errorf("uninstall: release %+v, StatefulSet %s %s, want the stored release's data-loss delete", un.Release, del.Action, del.Class)
	}
	// The claim the StatefulSet controller made, read from the cluster.
	if !strings.Contains(un.Notes, "left in the cluster: PersistentVolumeClaim/"+ns+"/data-shop-db-0") {
		t.Errorf("uninstall notes do not name the live claim left behind:\n%s", un.Notes)
	}
	if install.Release.Operation != "install" || install.Release.Namespace != moved || install.change(t, "StatefulSet").Action != "create" {
		t.Errorf("install: release %+v, want its install into %s", install.Release, moved)
	}

	// Nothing written: the release, its records, its pods and claims.
	if after := shimtest.DemoState(t, c, ns, "shop"); after != before {
		t.Errorf("the plans changed the release: before %+v, after %+v", before, after)
	}
	if after := helmReleaseSecrets(t, c, ns, "shop"); !maps.Equal(after, secrets) {
		t.Errorf("the plans changed Helm's records: %v, then %v", secrets, after)
	}
	shimtest.CheckSameUIDs(t, c, ns, pods, claims)
	for _, n := range []string{ns, moved} {
		if writes, seen := shimtest.ToolWroteSince(t, c, n, events); len(writes) > 0 || !seen {
			t.Errorf("namespace %s: the plans' writes %q (and they sent requests: %v; want none and true)", n, writes, seen)
		}
	}

	syncAsPlanned(t, c, hf, renamed, movedState, ns, moved, claims["data-shop-db-0"])
}

// syncAsPlanned checks that real helmfile does what the plans said: sync
// of the renamed state installs shop in moved and leaves the stored
// release in ns; sync of the move uninstalls that one and leaves its
// claim (of UID claim).
func syncAsPlanned(t *testing.T, c *testcluster.Cluster, hf, renamed, movedState, ns, moved string, claim types.UID) {
	t.Helper()
	helmfileSync(t, hf, renamed)
	for _, n := range []string{ns, moved} {
		if out := c.Helm(t, "status", "shop", "-n", n, "-o", "json"); !strings.Contains(out, `"status":"deployed"`) {
			t.Errorf("helmfile sync of the renamed state: release shop in %s:\n%s", n, out)
		}
	}
	helmfileSync(t, hf, movedState)
	if out, err := c.HelmErr("status", "shop", "-n", ns); err == nil {
		t.Errorf("helmfile sync of the move left release shop in %s:\n%s", ns, out)
	}
	if _, after := c.PodsAndClaims(t, ns, "app.kubernetes.io/component=db"); after["data-shop-db-0"] != claim {
		t.Errorf("claims then %v: want data-shop-db-0 (%s) left behind", after, claim)
	}
}

// helmfileSync runs helmfile sync in dir, or fails the test.
func helmfileSync(t *testing.T, hf, dir string) {
	t.Helper()
	if r := shimtest.Run(t, dir, os.Environ(), hf, "helmfile", "sync"); r.Code != 0 {
		t.Fatalf("helmfile sync:\n%s", r)
	}
}
