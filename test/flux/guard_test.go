package flux

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/guard"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/chartrepo"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/filetree"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// guardChart is chart "app" at version: a StatefulSet db whose claim comes
// from its volumeClaimTemplates, the templated claim keep, and, while
// withFiles, the templated claim files. Each templated claim names the
// volume the test made for it (values filesVolume, keepVolume): a claim left
// Pending would keep helm-controller waiting (kstatus) until it times out.
func guardChart(t *testing.T, version string, withFiles bool) string {
	t.Helper()
	claim := func(name string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: %[1]s}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
  storageClassName: ""
  volumeName: {{ .Values.%[1]sVolume | quote }}
`, name)
	}
	files := map[string]string{
		"app/Chart.yaml":          "apiVersion: v2\nname: app\nversion: " + version + "\n",
		"app/values.yaml":         "filesVolume: \"\"\nkeepVolume: \"\"\n",
		"app/templates/keep.yaml": claim("keep"),
		"app/templates/db.yaml":   dbStatefulSet("1Gi"),
	}
	if withFiles {
		files["app/templates/files.yaml"] = claim("files")
	}
	return filepath.Join(filetree.Write(t, files), "app")
}

// dbStatefulSet is the StatefulSet db of one replica whose claim data
// comes from its volumeClaimTemplates, asking for storage.
func dbStatefulSet(storage string) string {
	return `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: "postgres:16.1"}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], storageClassName: "", resources: {requests: {storage: ` + storage + `}}}
`
}

// volumes makes a PersistentVolume (reclaim policy Retain: the guard
// refuses no delete of it) for each claim of ns named, pre-bound to it.
func (f *Flux) volumes(t *testing.T, claims ...string) map[string]string {
	t.Helper()
	names := map[string]string{}
	var docs []string
	for _, claim := range claims {
		pv := f.NS + "-" + claim
		names[claim] = pv
		docs = append(docs, fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: %s}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  hostPath: {path: /tmp/%s}
  claimRef: {namespace: %s, name: %s}
`, pv, pv, f.NS, claim))
	}
	f.Apply(t, strings.Join(docs, "---\n"))
	return names
}

// helmRelease is the HelmRelease app of chart app at version from the
// HelmRepository charts; extra is more of its spec, indented by two.
func helmRelease(version string, volumes map[string]string, extra string) string {
	return fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: app}
spec:
  interval: 10m
  chart:
    spec:
      chart: app
      version: %q
      sourceRef: {kind: HelmRepository, name: charts}
  values:
    filesVolume: %s
    keepVolume: %s
%s`, version, volumes["files"], volumes["keep"], extra)
}

// helmRepository is the HelmRepository charts of the repository at url.
func helmRepository(url string) string {
	return "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: charts}\nspec: {url: " + url + ", interval: 10m}\n"
}

// installGuard installs the guard (`helm safe-upgrade guard install`) and
// waits until the API server enforces it: a probe claim of a release, in a
// namespace of its own, is refused.
func installGuard(t *testing.T, c *testcluster.Cluster, f *Flux) {
	t.Helper()
	mustTool(t, c, "guard", "install")
	ns := c.Namespace(t)
	probe := "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: guard-probe, annotations: {meta.helm.sh/release-name: probe}}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n"
	testcluster.Eventually(t, "the guard refuses a delete", func() (bool, string) {
		applyIn(t, c, ns, probe)
		out, err := kubectl(c, "delete", "-n", ns, "pvc", "guard-probe", "--wait=false")
		return err != nil && strings.Contains(out, "safe-upgrade guard"), out
	})
}

// uids returns the UIDs of the StatefulSet db, its pods and every claim of
// the namespace.
func (f *Flux) uids(t *testing.T) (sts types.UID, pods, claims map[string]types.UID) {
	t.Helper()
	s, err := f.c.Clientset(t).AppsV1().StatefulSets(f.NS).Get(t.Context(), "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, claims = f.c.PodsAndClaims(t, f.NS, "app=db")
	return s.UID, pods, claims
}

// TestGuardRefusesHelmController: with the guard installed, helm-controller's
// upgrade to a chart version that drops a templated claim (upgrade.force:
// Helm replaces every object with a PUT) is refused when Helm deletes the
// claim: the HelmRelease's Ready condition carries the guard's message, and
// the claims, the StatefulSet and its pods keep their UIDs. After the
// documented acknowledgement (the claim annotated with its UID, then `flux
// reconcile helmrelease --force`) the upgrade proceeds and deletes exactly
// that claim. Deleting the HelmRelease (helm-controller's uninstall) then
// leaves the claims and the StatefulSet: the uninstall fails on them, with
// the guard's message, and the HelmRelease waits, as Flux documents.
func TestGuardRefusesHelmController(t *testing.T) {
	c := testcluster.Get(t)
	f := Start(t, c)
	installGuard(t, c, f)
	url, _ := chartrepo.Serve(t, guardChart(t, "1.0.0", true), guardChart(t, "2.0.0", false))
	vols := f.volumes(t, "files", "keep", "data-db-0")
	// A replace (PUT) is what upgrade.force asks of Helm 4; with server-side
	// apply (helm-controller's default since v1.5) Helm refuses force
	// (TestForceWithServerSideApply), so both are client-side here.
	spec := "  install: {serverSideApply: false}\n  upgrade: {force: true, serverSideApply: disabled}\n"
	f.Apply(t, helmRepository(url)+"---\n"+helmRelease("1.0.0", vols, spec))
	f.WaitRelease(t, "app", "installed", Ready)
	testcluster.Eventually(t, "the StatefulSet's pod and claim", func() (bool, string) {
		_, pods, claims := f.uids(t)
		return len(pods) == 1 && len(claims) == 3, fmt.Sprint(pods, claims)
	})
	sts, pods, claims := f.uids(t)

	f.Apply(t, helmRelease("2.0.0", vols, spec))
	refusal := "safe-upgrade guard: refusing to delete PersistentVolumeClaim " + f.NS + "/files"
	// Done either way (refused, or upgraded when the guard did not refuse).
	h := f.WaitRelease(t, "app", "refused by the guard", func(h HelmRelease) bool {
		return h.Condition("Ready").Status != "Unknown" && h.Status.LastAttemptedRevision == "2.0.0"
	})
	if !strings.Contains(h.Condition("Ready").Message, refusal) || !strings.Contains(h.Condition("Ready").Message, guard.AckAnnotation+"=") {
		t.Errorf("the HelmRelease's Ready condition does not carry the guard's refusal %q:\n%s", refusal, h)
	}
	checkUIDs(t, f, "after the refused upgrade", sts, pods, claims)

	// The documented acknowledgement: the claim's own UID, then a forced
	// reconcile (docs/guard.md).
	f.Kubectl(t, "annotate", "-n", f.NS, "pvc", "files", guard.AckAnnotation+"="+string(claims["files"]))
	token := f.Reconcile(t, "app")
	h = f.WaitRelease(t, "app", "upgraded once acknowledged", func(h HelmRelease) bool {
		return h.Status.LastHandledForceAt == token && Ready(h)
	})
	testcluster.Eventually(t, "the acknowledged claim deleted", func() (bool, string) {
		_, _, now := f.uids(t)
		_, ok := now["files"]
		return !ok, fmt.Sprint(now)
	})
	delete(claims, "files")
	checkUIDs(t, f, "after the acknowledged upgrade", sts, pods, claims)

	// helm-controller's uninstall: the StatefulSet (background propagation
	// takes its pods) and the claim keep are refused. Helm 4's uninstall
	// reports only "failed to delete release" (its reasons go to its debug
	// log); the HelmRelease stays, failed, and helm-controller retries.
	f.Kubectl(t, "delete", "-n", f.NS, "helmrelease", "app", "--wait=false")
	testcluster.Eventually(t, "the uninstall refused by the guard", func() (bool, string) {
		h := f.Release(t, "app")
		ready := h.Condition("Ready")
		return ready.Reason == "UninstallFailed" && strings.Contains(ready.Message, "failed to delete release: app"), h.String()
	})
	checkUIDs(t, f, "after the refused uninstall", sts, pods, claims)
	// The refusal itself is in the API server's audit log (the reason
	// helm-controller's status leaves out).
	refusals := c.AuditEvents(t, func(e testcluster.AuditEvent) bool {
		return e.Verb == "delete" && e.ObjectRef.Namespace == f.NS && e.ObjectRef.Resource == "statefulsets" && e.ObjectRef.Name == "db" && e.ResponseCode == 403
	})
	if len(refusals) == 0 {
		t.Errorf("no refused DELETE of StatefulSet %s/db in the audit log", f.NS)
	} else {
		t.Logf("the uninstall's DELETE refused: %s by %s", refusals[0].RequestURI, refusals[0].UserAgent)
	}
	guardKeepsClaimsOfDeletedNamespace(t, f, claims)
}

// guardKeepsClaimsOfDeletedNamespace: the claim the StatefulSet controller
// made for helm-controller's release (from volumeClaimTemplates, in no
// manifest) carries the guard's marker, and deleting the namespace keeps it
// and the chart's claim, with their UIDs: the namespace controller's
// deletes are refused and the namespace waits, Terminating.
func guardKeepsClaimsOfDeletedNamespace(t *testing.T, f *Flux, claims map[string]types.UID) {
	t.Helper()
	if labels := f.Kubectl(t, "get", "pvc", "-n", f.NS, "data-db-0", "-o", "jsonpath={.metadata.labels}"); !strings.Contains(labels, guard.GuardedLabel) {
		t.Errorf("the claim the StatefulSet controller made is not marked %s: labels %s", guard.GuardedLabel, labels)
	}
	f.Kubectl(t, "delete", "namespace", f.NS, "--wait=false")
	testcluster.Eventually(t, "the namespace controller refused the claims' deletes", func() (bool, string) {
		out, err := kubectl(f.c, "get", "namespace", f.NS, "-o", "jsonpath={.status.conditions[?(@.type=='NamespaceDeletionContentFailure')].message}")
		return err == nil && strings.Contains(out, "safe-upgrade guard"), out
	})
	for _, name := range []string{"data-db-0", "keep"} {
		uid := strings.TrimSpace(f.Kubectl(t, "get", "pvc", "-n", f.NS, name, "-o", "jsonpath={.metadata.uid}"))
		if types.UID(uid) != claims[name] {
			t.Errorf("claim %s after the namespace's deletion: UID %q, was %s", name, uid, claims[name])
		}
	}
}

// checkUIDs checks that the StatefulSet db, its pods and the claims are the
// ones of before, by UID.
func checkUIDs(t *testing.T, f *Flux, when string, sts types.UID, pods, claims map[string]types.UID) {
	t.Helper()
	s, p, cl := f.uids(t)
	if s != sts || fmt.Sprint(p) != fmt.Sprint(pods) || fmt.Sprint(cl) != fmt.Sprint(claims) {
		t.Errorf("%s: StatefulSet %s -> %s, pods %v -> %v, claims %v -> %v: want the same UIDs", when, sts, s, pods, p, claims, cl)
	}
}

// TestForceWithServerSideApply: helm-controller v1.5.0 installs server-side
// by default and forces conflicts on every server-side upgrade; with
// upgrade.force it also asks Helm 4 to replace, and Helm refuses the pair:
// the upgrade fails, saying so, and changes nothing (docs/gitops.md, limits).
func TestForceWithServerSideApply(t *testing.T) {
	c := testcluster.Get(t)
	f := Start(t, c)
	url, _ := chartrepo.Serve(t, guardChart(t, "1.0.0", true), guardChart(t, "2.0.0", false))
	vols := f.volumes(t, "files", "keep", "data-db-0")
	spec := "  upgrade: {force: true}\n"
	f.Apply(t, helmRepository(url)+"---\n"+helmRelease("1.0.0", vols, spec))
	f.WaitRelease(t, "app", "installed", Ready)
	sts, pods, claims := f.uids(t)
	f.Apply(t, helmRelease("2.0.0", vols, spec))
	h := f.WaitRelease(t, "app", "failed", func(h HelmRelease) bool {
		return h.Condition("Ready").Status == "False" && h.Status.LastAttemptedRevision == "2.0.0"
	})
	if msg := h.Condition("Ready").Message; !strings.Contains(msg, "cannot use force conflicts and force replace together") {
		t.Errorf("upgrade.force on a server-side release: %s", h)
	}
	checkUIDs(t, f, "after the refused forced upgrade", sts, pods, claims)
}

// TestGuardUnderRemediation: helm-controller's remediation of an upgrade the
// guard refused (upgrade.remediation.remediateLastFailure) keeps the claims:
// an uninstall remediation is refused on the claims and the StatefulSet
// (its Remediated condition says the uninstall failed, and helm-controller
// then stops at the release left uninstalling); a rollback remediation
// fails in Helm 4 (the failed revision's manifest, which it updates from,
// no longer has the claim the guard kept). The claims, the StatefulSet and
// its pods keep their UIDs either way.
func TestGuardUnderRemediation(t *testing.T) {
	for _, tc := range []struct{ strategy, reason, message string }{
		{"uninstall", "UninstallFailed", "failed to delete release: app"},
		// Helm 4's rollback updates from the failed revision, whose
		// manifest no longer has the claim the guard kept.
		{"rollback", "RollbackFailed", `original object PersistentVolumeClaim with the name "files" not found`},
	} {
		t.Run(tc.strategy, func(t *testing.T) {
			c := testcluster.Get(t)
			f := Start(t, c)
			installGuard(t, c, f)
			url, _ := chartrepo.Serve(t, guardChart(t, "1.0.0", true), guardChart(t, "2.0.0", false))
			vols := f.volumes(t, "files", "keep", "data-db-0")
			spec := "  upgrade: {remediation: {remediateLastFailure: true, strategy: " + tc.strategy + "}}\n"
			f.Apply(t, helmRepository(url)+"---\n"+helmRelease("1.0.0", vols, spec))
			f.WaitRelease(t, "app", "installed", Ready)
			testcluster.Eventually(t, "the StatefulSet's pod and claim", func() (bool, string) {
				_, pods, claims := f.uids(t)
				return len(pods) == 1 && len(claims) == 3, fmt.Sprint(pods, claims)
			})
			sts, pods, claims := f.uids(t)
			f.Apply(t, helmRelease("2.0.0", vols, spec))
			// After a failed uninstall remediation helm-controller stops
			// at the release it left uninstalling ("unable to determine
			// state for release with status 'uninstalling'"), the
			// HelmRelease's generation unhandled.
			h := f.WaitStatus(t, "app", "remediated", func(h HelmRelease) bool {
				return h.Status.LastAttemptedRevision == "2.0.0" && (h.Condition("Remediated").Reason != "" || Ready(h))
			})
			if r := h.Condition("Remediated"); r.Reason != tc.reason || !strings.Contains(r.Message, tc.message) {
				t.Errorf("remediation by %s: Remediated %s: %s, want %s: …%s…\n%s", tc.strategy, r.Reason, r.Message, tc.reason, tc.message, h)
			}
			checkUIDs(t, f, "after the "+tc.strategy+" remediation", sts, pods, claims)
		})
	}
}
