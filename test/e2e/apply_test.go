package e2e

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/cli"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// stsRelease installs baseSTS with the real helm, its claims bound to
// volumes made for them, and waits (helm's --wait) until its two pods run;
// it returns the namespace and the v2 chart, whose claim template grows to
// 2Gi.
func stsRelease(t *testing.T, c *testcluster.Cluster) (string, string) {
	t.Helper()
	ns := c.Namespace(t)
	boundVolumes(t, c, ns, "data-db-0", "data-db-1")
	c.Helm(t, "install", "app", writeChart(t, "app", "1.0.0", map[string]string{"sts.yaml": baseSTS.yaml()}), "-n", ns,
		"--wait", "--timeout", "5m")
	pods, claims := c.PodsAndClaims(t, ns, "")
	if pods["db-1"] == "" || claims["data-db-1"] == "" {
		t.Fatalf("after helm install --wait: pods %v, claims %v", pods, claims)
	}
	bigger := baseSTS
	bigger.size = "2Gi"
	return ns, writeChart(t, "app", "2.0.0", map[string]string{"sts.yaml": bigger.yaml()})
}

// boundVolumes makes, on the project's control plane (no provisioner), a
// PersistentVolume bound in advance to each claim of namespace ns, so pods
// using them can be scheduled; a user's cluster provisions its own.
func boundVolumes(t *testing.T, c *testcluster.Cluster, ns string, claims ...string) {
	t.Helper()
	boundVolumesReclaimed(t, c, ns, corev1.PersistentVolumeReclaimRetain, claims...)
}

// boundVolumesReclaimed is boundVolumes with the volumes' reclaim policy.
func boundVolumesReclaimed(t *testing.T, c *testcluster.Cluster, ns string, policy corev1.PersistentVolumeReclaimPolicy, claims ...string) {
	t.Helper()
	if c.UserCluster {
		return
	}
	cs := c.Clientset(t)
	for _, claim := range claims {
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + claim}, Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: policy,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + ns + "-" + claim}},
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: claim},
		}}
		if _, err := cs.CoreV1().PersistentVolumes().Create(t.Context(), pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cs.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
		})
	}
}

// waitFor polls ok (see testcluster.Eventually).
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	testcluster.Eventually(t, what, func() (bool, string) { return ok(), "" })
}

// keptUIDs fails the test for each pod or claim of before whose UID changed
// in after: it was deleted.
func keptUIDs(t *testing.T, what string, before, after map[string]types.UID) {
	t.Helper()
	for name, uid := range before {
		if after[name] != uid {
			t.Errorf("%s %s: UID %s before, %q after: it was deleted", what, name, uid, after[name])
		}
	}
}

// keptPodsAndClaims fails the test for each pod or claim of ns whose UID
// is not the one it had before.
func keptPodsAndClaims(t *testing.T, c *testcluster.Cluster, ns string, pods, claims map[string]types.UID) {
	t.Helper()
	podsAfter, claimsAfter := c.PodsAndClaims(t, ns, "")
	keptUIDs(t, "Pod", pods, podsAfter)
	keptUIDs(t, "PersistentVolumeClaim", claims, claimsAfter)
}

func templateStorage(t *testing.T, c *testcluster.Cluster, ns string) string {
	sts, err := c.Clientset(t).AppsV1().StatefulSets(ns).Get(t.Context(), "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q := sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests["storage"]
	return q.String()
}

// toolWrites returns the tool's requests since event index before that are
// not reads and not dry-runs.
func toolWrites(t *testing.T, c *testcluster.Cluster, ns string, before int) []testcluster.AuditEvent {
	var out []testcluster.AuditEvent
	for _, e := range c.AuditEvents(t, nil)[before:] {
		if !strings.HasPrefix(e.UserAgent, "helm-safe-upgrade/") || e.ObjectRef.Namespace != ns {
			continue
		}
		if e.Verb == "get" || e.Verb == "list" || e.Verb == "watch" || strings.Contains(e.RequestURI, "dryRun=All") {
			continue
		}
		out = append(out, e)
	}
	return out
}

func TestApplyBlockedWithoutAck(t *testing.T) {
	c := testcluster.Get(t)
	ns, v2 := stsRelease(t, c)
	before := len(c.AuditEvents(t, nil))
	r := run(t, c, "app", v2, "-n", ns)
	if r.Code != 2 || !strings.Contains(r.Stderr, "--ack StatefulSet.apps/"+ns+"/db@") {
		t.Fatalf("want exit 2 with the --ack flag to add, got %d\n%s", r.Code, r.Stderr)
	}
	if w := toolWrites(t, c, ns, before); len(w) > 0 {
		t.Fatalf("blocked run wrote to the cluster: %+v", w)
	}
	if got := templateStorage(t, c, ns); got != "1Gi" {
		t.Fatalf("live claim template changed to %s", got)
	}
}

func TestApplyStatefulSetClaimTemplateKeepsPodsAndClaims(t *testing.T) {
	c := testcluster.Get(t)
	// What users get today: plain helm upgrade fails on the immutable field.
	ns, v2 := stsRelease(t, c)
	if out, err := c.HelmErr("upgrade", "app", v2, "-n", ns); err == nil || !strings.Contains(out, "Forbidden") && !strings.Contains(out, "immutable") {
		t.Fatalf("plain helm upgrade: want a failure on the immutable field, got %v\n%s", err, out)
	}

	acksFile := func(t *testing.T, fp string) string {
		path := filepath.Join(t.TempDir(), "acks.yaml")
		content := "- kind: StatefulSet\n  name: db\n  fingerprint: " + fp + "\n  reason: claim template grows, reviewed\n"
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name string
		args func(t *testing.T, ns, fp string) []string
		via  string
	}{
		{"ack by flag", func(_ *testing.T, ns, _ string) []string { return []string{"--ack", "StatefulSet/" + ns + "/db"} }, "via flag"},
		{"ack by flag with fingerprint", func(_ *testing.T, _ string, fp string) []string { return []string{"--ack", "StatefulSet/db@" + fp} }, "via flag"},
		{"ack file", func(t *testing.T, _ string, fp string) []string { return []string{"--ack-file", acksFile(t, fp)} }, "via ack-file"},
	}
	for i, tt := range tests {
		t.Run(strings.ReplaceAll(tt.name, " ", "_"), func(t *testing.T) {
			if i > 0 {
				ns, v2 = stsRelease(t, c)
			}
			p, _ := planJSON(t, c, "app", v2, "-n", ns)
			fp := p.change(t, "StatefulSet", "db").Fingerprint
			podsBefore, claimsBefore := c.PodsAndClaims(t, ns, "")

			stale := run(t, c, "app", v2, "-n", ns, "--ack", "StatefulSet/db@0123456789ab")
			if stale.Code != 2 || !strings.Contains(stale.Stderr, "stale") {
				t.Fatalf("stale fingerprint: want exit 2 saying stale, got %d\n%s", stale.Code, stale.Stderr)
			}

			r := run(t, c, append([]string{"app", v2, "-n", ns}, tt.args(t, ns, fp)...)...)
			if r.Code != 0 {
				t.Fatalf("exit %d\n%s", r.Code, r.Stderr)
			}
			if got := templateStorage(t, c, ns); got != "2Gi" {
				t.Fatalf("claim template after apply: %s, want 2Gi", got)
			}
			keptPodsAndClaims(t, c, ns, podsBefore, claimsBefore)
			// The watch saw it too, as the plan predicted: an orphan
			// recreate with the same pod template keeps both.
			for _, want := range []string{"StatefulSet.apps/" + ns + "/db: 2 of 2 pod(s) kept, 2 of 2 claim(s) kept (predicted: no pod replaced, every claim kept)",
				"Outcome: 1 as predicted, 0 differ"} {
				if !strings.Contains(r.Stderr, want) {
					t.Errorf("stderr does not say %q:\n%s", want, r.Stderr)
				}
			}
			history := c.Helm(t, "history", "app", "-n", ns)
			if !strings.Contains(history, "safe-upgrade: 1 destructive acked (recreate-required StatefulSet.apps/"+ns+"/db "+tt.via+")") {
				t.Errorf("helm history lacks the audit line:\n%s", history)
			}
		})
	}
}

// TestApplyPromptOnTerminal drives the prompt through a real pseudo-terminal.
func TestApplyPromptOnTerminal(t *testing.T) {
	c := testcluster.Get(t)
	for _, tt := range []struct {
		answer  string
		code    int
		storage string
	}{{"nope", 2, "1Gi"}, {"app", 0, "2Gi"}} {
		t.Run(tt.answer, func(t *testing.T) {
			ns, v2 := stsRelease(t, c)
			ptmx, tty, err := pty.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer ptmx.Close()
			defer tty.Close()
			streams := iostreams.Streams{In: tty, Out: tty, ErrOut: tty,
				InTTY: term.IsTerminal(int(tty.Fd())), OutTTY: term.IsTerminal(int(tty.Fd())), NoColor: true}
			done := make(chan int, 1)
			go func() {
				done <- cli.Execute("helm-safe-upgrade", []string{"app", v2, "-n", ns, "--kubeconfig", c.Kubeconfig}, streams, cli.BuildInfo{Version: "e2e"})
			}()
			screen := bufio.NewReader(ptmx)
			var seen strings.Builder
			for !strings.Contains(seen.String(), "Type the release name (app)") {
				b, err := screen.ReadByte()
				if err != nil {
					t.Fatalf("reading the terminal: %v\n%s", err, seen.String())
				}
				seen.WriteByte(b)
			}
			if _, err := ptmx.Write([]byte(tt.answer + "\n")); err != nil {
				t.Fatal(err)
			}
			go func() { _, _ = screen.WriteTo(discard{}) }()
			ctx, cancel := testcluster.CommandContext(t)
			defer cancel()
			select {
			case code := <-done:
				if code != tt.code {
					t.Fatalf("answer %q: exit %d, want %d", tt.answer, code, tt.code)
				}
			case <-ctx.Done():
				t.Fatal("the tool did not finish after the answer")
			}
			if got := templateStorage(t, c, ns); got != tt.storage {
				t.Fatalf("answer %q: claim template %s, want %s", tt.answer, got, tt.storage)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestApplyWritesWhatWasShown: a Secret generated with randAlphaNum holds,
// after apply, exactly the value the plan showed (masked by its hash), and
// no request asked for force or replaced an object.
func TestApplyWritesWhatWasShown(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	secret := func(version string) map[string]string {
		return map[string]string{"s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: creds, labels: {v: \"" + version + "\"}}\nstringData:\n  password: {{ randAlphaNum 24 | quote }}\n"}
	}
	c.Helm(t, "install", "app", writeChart(t, "app", "1.0.0", secret("1")), "-n", ns)
	before := len(c.AuditEvents(t, nil))
	masker := redact.NewMasker()
	r := runMasked(t, c, masker, "app", writeChart(t, "app", "2.0.0", secret("2")), "-n", ns, "-o", "json")
	if r.Code != 0 {
		t.Fatalf("exit %d\n%s", r.Code, r.Stderr)
	}
	shown := regexp.MustCompile(`\+\s+password: '?(\(sensitive: [^)]*\))`).FindStringSubmatch(r.Stdout)
	if shown == nil {
		t.Fatalf("the plan shows no new masked password:\n%s", r.Stdout)
	}
	s, err := c.Clientset(t).CoreV1().Secrets(ns).Get(t.Context(), "creds", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := masker.Value(s.Data["password"]); got != shown[1] {
		t.Fatalf("cluster holds %s, the plan showed %s", got, shown[1])
	}
	if strings.Contains(r.Stdout, string(s.Data["password"])) || strings.Contains(r.Stdout, base64.StdEncoding.EncodeToString(s.Data["password"])) {
		t.Fatal("the plan leaks the generated password")
	}
	for _, e := range c.AuditEvents(t, nil)[before:] {
		// Helm's release records and the release's Lease (taken and
		// released with updates) are not objects of the chart.
		if !strings.HasPrefix(e.UserAgent, "helm-safe-upgrade/") || strings.HasPrefix(e.ObjectRef.Name, "sh.helm.release.v1.") || e.ObjectRef.Resource == "leases" {
			continue
		}
		if e.Verb == "update" || strings.Contains(e.RequestURI, "force=true") {
			t.Errorf("without --force the tool sent %s %s", e.Verb, e.RequestURI)
		}
	}
}

// TestSavedPlan: --plan applies exactly the render saved by --plan-out (a
// randAlphaNum value included) and refuses when the release or a changed
// object moved since. The plan is saved in clear (--plan-unencrypted), so
// that the test can read it and edit it field by field; encryption is
// TestSavedPlanTwoJobs'.
func TestSavedPlan(t *testing.T) {
	c := testcluster.Get(t)
	chart := func(version string) string {
		return writeChart(t, "app", version, map[string]string{
			"s.yaml":  "apiVersion: v1\nkind: Secret\nmetadata: {name: creds, labels: {v: \"" + version + "\"}}\nstringData:\n  password: {{ randAlphaNum 24 | quote }}\n",
			"cm.yaml": configMap(false, version),
		})
	}
	v1, v2 := chart("1"), chart("2")
	save := func(t *testing.T, ns string) (string, string) {
		path := filepath.Join(t.TempDir(), "plan.json")
		r := run(t, c, "app", v2, "-n", ns, "--dry-run", "-o", "json", "--plan-out", path, "--plan-unencrypted")
		if r.Code != 0 {
			t.Fatalf("plan-out: exit %d\n%s", r.Code, r.Stderr)
		}
		if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
			t.Fatalf("saved plan: %v, mode %v; want 0600", err, info.Mode())
		}
		return path, r.Stdout
	}

	t.Run("applies exactly the saved render", func(t *testing.T) {
		ns := c.Namespace(t)
		c.Helm(t, "install", "app", v1, "-n", ns)
		path, shownPlan := save(t, ns)
		shown := regexp.MustCompile(`\+\s+password: '?(\(sensitive: [^)]*\))`).FindStringSubmatch(shownPlan)
		if shown == nil {
			t.Fatalf("no masked password in the plan:\n%s", shownPlan)
		}
		r := run(t, c, "app", v2, "-n", ns, "--plan", path, "--plan-unencrypted")
		if r.Code != 0 {
			t.Fatalf("--plan: exit %d\n%s", r.Code, r.Stderr)
		}
		s, err := c.Clientset(t).CoreV1().Secrets(ns).Get(t.Context(), "creds", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var saved struct{ MaskKey []byte }
		if err := json.Unmarshal(data, &saved); err != nil || len(saved.MaskKey) == 0 {
			t.Fatalf("the saved plan carries no masking key: %v", err)
		}
		if got := (&redact.Masker{Key: saved.MaskKey}).Value(s.Data["password"]); got != shown[1] {
			t.Fatalf("applied %s, the saved plan showed %s", got, shown[1])
		}
	})
	t.Run("refused when the file was edited, and nothing is written", func(t *testing.T) {
		ns := c.Namespace(t)
		c.Helm(t, "install", "app", v1, "-n", ns)
		path, _ := save(t, ns)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		edited := strings.Replace(string(data), `mode: \"2\"`, `mode: \"edited\"`, 1)
		if edited == string(data) {
			t.Fatalf("the saved manifest has no mode: \"2\" to edit:\n%s", data)
		}
		if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
			t.Fatal(err)
		}
		before := len(c.AuditEvents(t, nil))
		r := run(t, c, "app", v2, "-n", ns, "--plan", path, "--plan-unencrypted")
		if r.Code != 1 || !strings.Contains(r.Stderr, "changed after it was saved") {
			t.Fatalf("want exit 1 saying the plan was edited, got %d\n%s", r.Code, r.Stderr)
		}
		if w := toolWrites(t, c, ns, before); len(w) > 0 {
			t.Errorf("an edited plan was refused, yet the tool wrote: %+v", w)
		}
	})
	t.Run("refused on another cluster holding the same release, and nothing is written", func(t *testing.T) {
		ns := c.Namespace(t)
		c.Helm(t, "install", "app", v1, "-n", ns)
		path, _ := save(t, ns)
		other := testcluster.Another(t)
		if _, err := other.Clientset(t).CoreV1().Namespaces().Create(t.Context(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		other.Helm(t, "install", "app", v1, "-n", ns)
		before, beforeHere := len(other.AuditEvents(t, nil)), len(c.AuditEvents(t, nil))
		r := run(t, other, "app", v2, "-n", ns, "--plan", path, "--plan-unencrypted")
		if r.Code != 1 || !strings.Contains(r.Stderr, "saved plan was made for another cluster") || !strings.Contains(r.Stderr, "kube-system UID") {
			t.Fatalf("want exit 1 naming the cluster's identity, got %d\n%s", r.Code, r.Stderr)
		}
		if w := toolWrites(t, other, ns, before); len(w) > 0 {
			t.Errorf("a plan of another cluster was refused, yet the tool wrote: %+v", w)
		}
		if w := toolWrites(t, c, ns, beforeHere); len(w) > 0 {
			t.Errorf("the tool wrote to the cluster the plan was made for: %+v", w)
		}
		if hist := other.Helm(t, "history", "app", "-n", ns); strings.Contains(hist, "\n2 ") {
			t.Errorf("the release moved on the other cluster:\n%s", hist)
		}
	})
	t.Run("refused after another upgrade moved the revision", func(t *testing.T) {
		ns := c.Namespace(t)
		c.Helm(t, "install", "app", v1, "-n", ns)
		path, _ := save(t, ns)
		c.Helm(t, "upgrade", "app", v1, "-n", ns)
		r := run(t, c, "app", v2, "-n", ns, "--plan", path, "--plan-unencrypted")
		if r.Code != 1 || !strings.Contains(r.Stderr, "moved from revision 1 to 2") {
			t.Fatalf("want exit 1 naming the moved revision, got %d\n%s", r.Code, r.Stderr)
		}
	})
	t.Run("refused when a changed object moved", func(t *testing.T) {
		ns := c.Namespace(t)
		c.Helm(t, "install", "app", v1, "-n", ns)
		path, _ := save(t, ns)
		cms := c.Clientset(t).CoreV1().ConfigMaps(ns)
		cm, err := cms.Get(t.Context(), "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["mode"] = "edited by hand"
		if _, err := cms.Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		r := run(t, c, "app", v2, "-n", ns, "--plan", path, "--plan-unencrypted")
		if r.Code != 1 || !strings.Contains(r.Stderr, "ConfigMap/"+ns+"/settings changed in the cluster") {
			t.Fatalf("want exit 1 naming the ConfigMap, got %d\n%s", r.Code, r.Stderr)
		}
	})
}
