package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/releasestate"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/toolproc"
)

// waitHook is a pre-upgrade hook Job that never completes (no kubelet): it
// holds an apply live. rejectHook is one the API server refuses (an
// invalid data key): Helm's upgrade fails after the recreate's delete.
const (
	waitHook = `apiVersion: batch/v1
kind: Job
metadata:
  name: pre-upgrade
  annotations: {"helm.sh/hook": pre-upgrade}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers: [{name: wait, image: registry.k8s.io/pause:3.10}]
`
	rejectHook = `apiVersion: v1
kind: ConfigMap
metadata:
  name: pre-upgrade
  annotations: {"helm.sh/hook": pre-upgrade}
data:
  "not a valid key!": "x"
`
)

// stsV2 is stsRelease's v2 chart (the claim template grows to 2Gi: an
// acknowledged recreate) with a pre-upgrade hook.
func stsV2(t *testing.T, hook string) string {
	bigger := baseSTS
	bigger.size = "2Gi"
	return writeChart(t, "app", "2.0.0", map[string]string{"sts.yaml": bigger.yaml(), "hook.yaml": hook})
}

// TestToolSubprocess is the tool that startTool runs in a subprocess;
// alone it does nothing.
func TestToolSubprocess(t *testing.T) { toolproc.Child(t) }

// startTool starts the tool with args against c in a subprocess, so that
// it can be killed as a user's would be.
func startTool(t *testing.T, c *testcluster.Cluster, args ...string) *toolproc.Process {
	t.Helper()
	return toolproc.Start(t, "TestToolSubprocess", append(args, "--kubeconfig", c.Kubeconfig)...)
}

// applyHoldingLease installs release app (a ConfigMap) in a fresh
// namespace and starts an apply of it whose pre-upgrade hook waits,
// returning once that apply holds the release's Lease: the namespace, the
// chart at a version (with a hook, if given), the apply's process and the
// Lease's holder.
func applyHoldingLease(t *testing.T, c *testcluster.Cluster) (ns string, chart func(version, hook string) string, p *toolproc.Process, holder string) {
	t.Helper()
	ns = c.Namespace(t)
	chart = func(version, hook string) string {
		files := map[string]string{"cm.yaml": configMap(false, version)}
		if hook != "" {
			files["hook.yaml"] = hook
		}
		return writeChart(t, "app", version, files)
	}
	c.Helm(t, "install", "app", chart("1.0.0", ""), "-n", ns)
	p = startTool(t, c, "app", chart("2.0.0", waitHook), "-n", ns, "--timeout", "10m")
	testcluster.Eventually(t, "the apply holding the Lease", func() (bool, string) {
		var stale bool
		holder, stale = leaseHolder(t, c, ns, "app")
		return holder != "" && !stale, "holder " + holder
	})
	return ns, chart, p, holder
}

// leaseHolder returns the holder of the release's Lease ("" when free or
// absent) and whether it is stale.
func leaseHolder(t *testing.T, c *testcluster.Cluster, ns, release string) (string, bool) {
	t.Helper()
	l, err := c.Clientset(t).CoordinationV1().Leases(ns).Get(t.Context(), releasestate.LeaseName(release), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", true
	}
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return "", true
	}
	stale := time.Since(l.Spec.RenewTime.Time) > time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second
	return *l.Spec.HolderIdentity, stale
}

// killApplyWaitingOnHook starts the acknowledged recreate of stsRelease's
// StatefulSet with a hook that never completes, kills it (SIGKILL) once the
// StatefulSet is deleted and the hook waits, and waits until its Lease is
// stale, as a user who runs --recover after a kill would find it.
func killApplyWaitingOnHook(t *testing.T, c *testcluster.Cluster, ns string) {
	t.Helper()
	killWaitingOnHook(t, c, ns, stsV2(t, waitHook))
}

// killWaitingOnHook is killApplyWaitingOnHook with the chart to apply: one
// whose StatefulSet db is recreated and whose hook never completes.
func killWaitingOnHook(t *testing.T, c *testcluster.Cluster, ns, chart string) {
	t.Helper()
	p := startTool(t, c, "app", chart, "-n", ns, "--ack-all-destructive", "--timeout", "10m")
	cs := c.Clientset(t)
	testcluster.Eventually(t, "the StatefulSet deleted and the hook waiting", func() (bool, string) {
		_, stsErr := cs.AppsV1().StatefulSets(ns).Get(t.Context(), "db", metav1.GetOptions{})
		_, jobErr := cs.BatchV1().Jobs(ns).Get(t.Context(), "pre-upgrade", metav1.GetOptions{})
		return apierrors.IsNotFound(stsErr) && jobErr == nil, fmt.Sprintf("StatefulSet: %v, hook Job: %v", stsErr, jobErr)
	})
	p.Stop(t, syscall.SIGKILL)
	testcluster.Eventually(t, "the killed apply's Lease stale", func() (bool, string) {
		holder, stale := leaseHolder(t, c, ns, "app")
		return stale, "held by " + holder
	})
}

// journal returns the journal Secret of release app.
func journal(t *testing.T, c *testcluster.Cluster, ns string) *corev1.Secret {
	t.Helper()
	s, err := c.Clientset(t).CoreV1().Secrets(ns).Get(t.Context(), releasestate.JournalName("app"), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the journal: %v", err)
	}
	return s
}

// noStatefulSet fails the test when StatefulSet db exists.
func noStatefulSet(t *testing.T, c *testcluster.Cluster, ns, when string) {
	t.Helper()
	if _, err := c.Clientset(t).AppsV1().StatefulSets(ns).Get(t.Context(), "db", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("%s: the StatefulSet exists (%v): something was restored", when, err)
	}
}

// TestRecoverRefusesForgedJournal: a ServiceAccount allowed only to create
// Secrets in the namespace writes a journal listing a ClusterRoleBinding of
// itself to cluster-admin as deleted; --recover refuses it naming the
// entry, and nobody creates a ClusterRoleBinding.
func TestRecoverRefusesForgedJournal(t *testing.T) {
	c := testcluster.Get(t)
	ns, _ := stsRelease(t, c)
	cs := c.Clientset(t)
	forger := narrowServiceAccount(t, c, ns, "forger", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}})
	binding := "forged-" + ns
	crb := map[string]interface{}{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]interface{}{"name": binding},
		"roleRef":  map[string]interface{}{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
		"subjects": []interface{}{map[string]interface{}{"kind": "ServiceAccount", "name": "forger", "namespace": ns}}}
	rec := map[string]interface{}{"release": "app", "namespace": ns, "revision": 2, "step": "upgrading", "started": time.Now().UTC().Format(time.RFC3339),
		"writtenBy": "admin", "objects": []interface{}{map[string]interface{}{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
			"name": binding, "uid": "0b0e0b0e", "deleted": true, "object": crb}}}
	data, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: releasestate.JournalName("app"), Labels: map[string]string{releasestate.JournalReleaseLabel: "app"}},
		Type: releasestate.JournalType, Data: map[string][]byte{"journal.json": data}}
	// The RBAC authorizer learns the new binding from its informer a
	// moment later: Forbidden until then.
	testcluster.Eventually(t, "the ServiceAccount writes the journal", func() (bool, string) {
		_, err := forger.CoreV1().Secrets(ns).Create(t.Context(), secret, metav1.CreateOptions{})
		if apierrors.IsForbidden(err) {
			return false, err.Error()
		}
		if err != nil {
			t.Fatalf("the ServiceAccount writes the journal: %v", err)
		}
		return true, ""
	})

	r := run(t, c, "app", "--recover", "--yes", "-n", ns)
	entry := "ClusterRoleBinding.rbac.authorization.k8s.io/" + binding
	if r.Code != 1 || !strings.Contains(r.Stderr, "is refused: entry 1, "+entry+": it is in no namespace (cluster-scoped)") {
		t.Errorf("--recover of the forged journal: exit %d, want 1 naming %s and why\n%s", r.Code, entry, r.Stderr)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Get(t.Context(), binding, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ClusterRoleBinding exists after --recover (%v)", err)
	}
	creates := c.AuditEvents(t, func(e testcluster.AuditEvent) bool {
		return e.Verb == "create" && e.ObjectRef.Resource == "clusterrolebindings" && e.ObjectRef.Name == binding
	})
	if len(creates) > 0 {
		t.Errorf("the audit log shows creates of the ClusterRoleBinding: %+v", creates)
	}
	// The journal is kept for the admin to look at; every run still says so.
	if r := run(t, c, "app", stsV2(t, ""), "-n", ns, "--dry-run"); r.Code != 1 || !strings.Contains(r.Stderr, "--recover") {
		t.Errorf("plan with the forged journal: exit %d, want 1 naming --recover", r.Code)
	}
}

// narrowServiceAccount creates ServiceAccount name in ns allowed only rule
// there, and returns a client acting as it (the admin impersonates it).
func narrowServiceAccount(t *testing.T, c *testcluster.Cluster, ns, name string, rules ...rbacv1.PolicyRule) kubernetes.Interface {
	t.Helper()
	cs := c.Clientset(t)
	ctx := t.Context()
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(c.RESTConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceAccountUser(ns, name)}
	sa, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return sa
}

func serviceAccountUser(ns, name string) string { return "system:serviceaccount:" + ns + ":" + name }

// TestRecoverEditedJournal: an apply is killed after the recreate's delete;
// its journal, edited (another image), is refused naming the entry and the
// field, and nothing is created; without --yes and a terminal nothing is
// restored either; the journal as the apply wrote it restores the
// StatefulSet, whose pods and claims keep their UIDs.
func TestRecoverEditedJournal(t *testing.T) {
	c := testcluster.Get(t)
	ns, _ := stsRelease(t, c)
	pods, claims := c.PodsAndClaims(t, ns, "")
	killApplyWaitingOnHook(t, c, ns)
	cs := c.Clientset(t)
	written := journal(t, c, ns)
	edited := written.DeepCopy()
	edited.Data["journal.json"] = bytes.Replace(written.Data["journal.json"], []byte(`"postgres:16.1"`), []byte(`"evil.example.com/postgres:16.1"`), 1)
	if bytes.Equal(edited.Data["journal.json"], written.Data["journal.json"]) {
		t.Fatalf("the journal holds no image postgres:16.1:\n%s", written.Data["journal.json"])
	}
	if _, err := cs.CoreV1().Secrets(ns).Update(t.Context(), edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := run(t, c, "app", "--recover", "--yes", "-n", ns)
	want := "entry 1, StatefulSet.apps/" + ns + "/db: it differs from the deployed revision 1 at spec.template.spec.containers[0].image, which the chart sets"
	if r.Code != 1 || !strings.Contains(r.Stderr, want) {
		t.Errorf("--recover of the edited journal: exit %d, want 1 saying %q\n%s", r.Code, want, r.Stderr)
	}
	noStatefulSet(t, c, ns, "after the edited journal was refused")

	back := journal(t, c, ns)
	back.Data = written.Data
	if _, err := cs.CoreV1().Secrets(ns).Update(t.Context(), back, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The recover command is --recover's verb: the same run.
	r = run(t, c, "recover", "app", "-n", ns)
	if r.Code != 1 || !strings.Contains(r.Stderr, "StatefulSet.apps/"+ns+"/db: re-create it with its previous spec") || !strings.Contains(r.Stderr, "confirm on a terminal, or pass --yes") {
		t.Errorf("--recover without --yes and without a terminal: exit %d, want 1 saying what it would do and asking for --yes\n%s", r.Code, r.Stderr)
	}
	noStatefulSet(t, c, ns, "after --recover without --yes")

	r = run(t, c, "-n", ns, "recover", "app", "--yes")
	for _, w := range []string{`by "admin"`, "--recover will:", "StatefulSet.apps/" + ns + "/db re-created with its previous spec", "Revision 2 was left pending-upgrade: marked failed"} {
		if !strings.Contains(r.Stderr, w) {
			t.Errorf("--recover does not say %q", w)
		}
	}
	if r.Code != 0 {
		t.Fatalf("--recover of the journal as written: exit %d\n%s", r.Code, r.Stderr)
	}
	if got := templateStorage(t, c, ns); got != "1Gi" {
		t.Errorf("restored claim template %s, want revision 1's 1Gi", got)
	}
	keptPodsAndClaims(t, c, ns, pods, claims)
}

// TestApplyRefusedWhileAnotherApplies: an apply waits on a hook (holding
// the release's Lease); a plan notes the Lease, a second apply and
// --recover exit 1 naming its holder; once it ends (SIGTERM) the Lease is
// free and the next apply goes through.
func TestApplyRefusedWhileAnotherApplies(t *testing.T) {
	c := testcluster.Get(t)
	ns, chart, p, holder := applyHoldingLease(t, c)

	// The plan runs while the apply holds the Lease, before or after Helm
	// writes the pending revision (a race no test controls): planned with
	// a note (exit 0), or refused as pending (exit 1) saying the same.
	plan := run(t, c, "app", chart("3.0.0", ""), "-n", ns, "--dry-run")
	running := "an apply of this release is running: the Lease " + ns + "/" + releasestate.LeaseName("app") + " is held by " + holder
	pending := plan.Code == 1 && strings.Contains(plan.Stderr, "is pending-upgrade at revision 2")
	if plan.Code != 0 && !pending || !strings.Contains(plan.Stdout+plan.Stderr, running) {
		t.Errorf("plan during the apply: exit %d, want 0, or 1 refusing the pending revision, saying %q\n%s\n%s", plan.Code, running, plan.Stdout, plan.Stderr)
	}
	second := run(t, c, "app", chart("3.0.0", ""), "-n", ns)
	if second.Code != 1 || !strings.Contains(second.Stderr, "is being applied by "+holder) {
		t.Errorf("second apply: exit %d, want 1 naming %s\n%s", second.Code, holder, second.Stderr)
	}
	recovered := run(t, c, "app", "--recover", "--yes", "-n", ns)
	if recovered.Code != 1 || !strings.Contains(recovered.Stderr, "is being applied by "+holder) {
		t.Errorf("--recover during the apply: exit %d, want 1 naming %s\n%s", recovered.Code, holder, recovered.Stderr)
	}
	p.Stop(t, syscall.SIGTERM)
	if h, _ := leaseHolder(t, c, ns, "app"); h != "" {
		t.Errorf("the Lease is still held by %s after the apply ended", h)
	}
	if r := run(t, c, "app", chart("3.0.0", ""), "-n", ns); r.Code != 0 {
		t.Errorf("apply after the first ended: exit %d\n%s", r.Code, r.Stderr)
	}
}

// TestTwoAppliesAtOnce: two applies of the same release started together,
// again and again: each time exactly one applies, the other exits 1 naming
// the run that holds (or took) the Lease.
func TestTwoAppliesAtOnce(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	chart := writeChart(t, "app", "1.0.0", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {round: {{ .Values.round | quote }}}\n"})
	c.Helm(t, "install", "app", chart, "-n", ns, "--set", "round=0")
	took := regexp.MustCompile(`took the Lease \S+ as (.+)`)
	const rounds = 20
	for i := 1; i <= rounds; i++ {
		var wg sync.WaitGroup
		results := make([]result, 2)
		for k := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[k] = run(t, c, "app", chart, "-n", ns, "--set", fmt.Sprintf("round=%d", i), "--debug")
			}()
		}
		wg.Wait()
		win, lose := results[0], results[1]
		if lose.Code == 0 {
			win, lose = lose, win
		}
		m := took.FindStringSubmatch(win.Stderr)
		if win.Code != 0 || lose.Code != 1 || m == nil {
			t.Fatalf("round %d: exits %d and %d, want 0 (taking the Lease) and 1\nfirst:\n%s\nsecond:\n%s", i, results[0].Code, results[1].Code, results[0].Stderr, results[1].Stderr)
		}
		if !strings.Contains(lose.Stderr, m[1]) || !strings.Contains(lose.Stderr, "nothing was written") {
			t.Fatalf("round %d: the refused apply does not name the holder %s or say nothing was written:\n%s", i, m[1], lose.Stderr)
		}
	}
	// Helm keeps the last 10 revisions (--history-max): the newest one's
	// number counts them all.
	var hist []struct{ Revision int }
	if err := json.Unmarshal([]byte(c.Helm(t, "history", "app", "-n", ns, "-o", "json")), &hist); err != nil {
		t.Fatal(err)
	}
	if last := hist[len(hist)-1].Revision; last != rounds+1 {
		t.Errorf("the last revision is %d, want %d: one per round", last, rounds+1)
	}
}

// TestApplyWithoutLeaseRBAC: a user allowed everything the apply needs but
// Leases is refused before any write, naming the permission.
func TestApplyWithoutLeaseRBAC(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	c.Helm(t, "install", "app", writeChart(t, "app", "1.0.0", map[string]string{"cm.yaml": configMap(false, "a")}), "-n", ns)
	narrowServiceAccount(t, c, ns, "deployer", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"*"}})
	user := serviceAccountUser(ns, "deployer")
	before := len(c.AuditEvents(t, nil))
	r := run(t, c, "app", writeChart(t, "app", "2.0.0", map[string]string{"cm.yaml": configMap(false, "b")}), "-n", ns, "--kube-as-user", user)
	want := "you may not get, create, update leases (coordination.k8s.io) in namespace " + ns
	if r.Code != 1 || !strings.Contains(r.Stderr, want) {
		t.Fatalf("exit %d, want 1 saying %q\n%s", r.Code, want, r.Stderr)
	}
	var writes []testcluster.AuditEvent
	for _, e := range c.AuditEvents(t, nil)[before:] {
		if e.User == user && e.ObjectRef.Namespace == ns && e.Verb != "get" && e.Verb != "list" && e.Verb != "watch" && !strings.Contains(e.RequestURI, "dryRun=All") {
			writes = append(writes, e)
		}
	}
	if len(writes) > 0 {
		t.Errorf("the refused apply wrote: %+v", writes)
	}
	// With the permission, the same user applies.
	grant := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "leases"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}}}}
	cs := c.Clientset(t)
	if _, err := cs.RbacV1().Roles(ns).Create(t.Context(), grant, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "leases"}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "leases"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "deployer", Namespace: ns}}}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(t.Context(), rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, "the deployer's apply with the Lease permission", func() (bool, string) {
		r := run(t, c, "app", writeChart(t, "app", "2.0.0", map[string]string{"cm.yaml": configMap(false, "b")}), "-n", ns, "--kube-as-user", user)
		return r.Code == 0, r.Stderr
	})
}

// TestFailedRevisionHistoryStartsWithTheToolsLine: Helm fails after the
// recreate's delete (a hook the server refuses); in helm history's table
// the failed revision's description starts with what the tool deleted and
// restored, not with Helm's multi-line error.
func TestFailedRevisionHistoryStartsWithTheToolsLine(t *testing.T) {
	c := testcluster.Get(t)
	ns, _ := stsRelease(t, c)
	r := run(t, c, "app", stsV2(t, rejectHook), "-n", ns, "--ack-all-destructive")
	if r.Code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.Code, r.Stderr)
	}
	table := c.Helm(t, "history", "app", "-n", ns)
	var row string
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "2 ") {
			row = line
		}
	}
	// helm history separates its columns with tabs; a description is one
	// line with its own tabs escaped, so the last cell is all of it (Helm's
	// messages hold runs of spaces: no splitting on those).
	fields := strings.Split(strings.TrimSpace(row), "\t")
	if len(fields) == 0 || !strings.HasPrefix(fields[len(fields)-1], "safe-upgrade deleted StatefulSet") {
		t.Errorf("revision 2's description in helm history does not start with the tool's line:\n%s", table)
	}
	if !strings.Contains(r.Stderr, "safe-upgrade deleted StatefulSet.apps/"+ns+"/db for recreation; restored from the recreate journal") {
		t.Errorf("stderr does not say what was deleted and restored:\n%s", r.Stderr)
	}
}
