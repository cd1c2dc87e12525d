package planner

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/live"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/redact"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/injection"
)

// immutableSecret is a Secret whose data cannot change: a new value makes
// it recreate-required, a destructive change with a fingerprint.
const immutableSecret = `---
# Source: app/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata: {name: creds}
immutable: true
data: {password: %s}
`

func offlinePlan(t *testing.T, m *redact.Masker, base, head string) *plan.Plan {
	t.Helper()
	p := New(Offline{Release: "app", Namespace: "prod"}.Parts(), "")
	p.Masker = m
	out, err := p.Plan(context.Background(), Input{
		Release:          plan.Release{Name: "app", Namespace: "prod", Chart: "app-2"},
		PreviousManifest: base, NextManifest: head, PreviousName: "base",
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSecretsKeyedPerPlan (issue 10): the markers of one value differ from
// one plan's key to another's, but the fingerprint of a destructive Secret
// change stays the same (acknowledgements survive from the reviewed plan to
// the apply) and no value reaches the plan.
func TestSecretsKeyedPerPlan(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	base := strings.Replace(immutableSecret, "%s", b64([]byte("old-canary-value")), 1)
	head := strings.Replace(immutableSecret, "%s", b64([]byte("new-canary-value")), 1)
	a := offlinePlan(t, redact.NewMasker(), base, head)
	b := offlinePlan(t, redact.NewMasker(), base, head)
	ca, cb := a.Changes[0], b.Changes[0]
	if !ca.Destructive || ca.Fingerprint == "" {
		t.Fatalf("want a destructive change with a fingerprint, got %+v", ca)
	}
	if ca.Fingerprint != cb.Fingerprint {
		t.Errorf("fingerprints differ across keys: %s, %s", ca.Fingerprint, cb.Fingerprint)
	}
	ja, _ := json.Marshal(ca.After.Object)
	jb, _ := json.Marshal(cb.After.Object)
	if string(ja) == string(jb) {
		t.Error("the markers are the same under two keys")
	}
	for _, c := range []plan.Change{ca, cb} {
		all, _ := json.Marshal([]interface{}{c.Before.Object, c.After.Object, c.Reasons, c.Notes})
		if strings.Contains(string(all), "canary-value") || strings.Contains(string(all), b64([]byte("new-canary-value"))) {
			t.Errorf("a value reached the plan: %s", all)
		}
	}
}

// TestPreviousManifestWithList (issue 10): a release whose last manifest
// holds a List plans its items one by one.
func TestPreviousManifestWithList(t *testing.T) {
	list := "---\n# Source: app/templates/list.yaml\napiVersion: v1\nkind: List\nitems:\n" +
		"- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {k: v1}}\n" +
		"- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}, data: {k: v1}}\n"
	head := "---\n# Source: app/templates/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v2}\n"
	p := offlinePlan(t, redact.NewMasker(), list, head)
	got := map[string]plan.Action{}
	for _, c := range p.Changes {
		got[c.ID.String()] = c.Action
	}
	if len(got) != 2 || got["ConfigMap/prod/a"] != plan.ActionUpdate || got["ConfigMap/prod/b"] != plan.ActionDelete {
		t.Errorf("changes %v: want ConfigMap a updated and b deleted", got)
	}
}

// TestLiveSecretsSanitisedBeforeEvaluation: the values only the cluster
// holds (a listed Secret's data) are in the sanitiser before any object is
// evaluated, though the listed objects stay encoded until then: a warning
// the API server sends about one object is printed as it comes, and may
// quote another.
func TestLiveSecretsSanitisedBeforeEvaluation(t *testing.T) {
	secretGVK := schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Version: "v1"}})
	mapper.Add(secretGVK, meta.RESTScopeNamespace)
	var objs []runtime.Object
	var manifestText strings.Builder
	for i := range live.MinListGroup {
		name := fmt.Sprintf("s%d", i)
		objs = append(objs, &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]interface{}{"name": name, "namespace": "prod"},
			"data":     map[string]interface{}{"k": base64.StdEncoding.EncodeToString([]byte("live-only-value-" + name))},
		}})
		fmt.Fprintf(&manifestText, "---\napiVersion: v1\nkind: Secret\nmetadata: {name: %s}\nstringData: {k: chart-value}\n", name)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{{Version: "v1", Resource: "secrets"}: "SecretList"}, objs...)
	cluster := Live{Cluster: &live.Cluster{Dynamic: dyn, Mapper: mapper}}
	set, err := manifest.Split("m", manifestText.String(), "prod", cluster)
	if err != nil {
		t.Fatal(err)
	}
	san := redact.NewSanitizer(redact.NewMasker())
	work := New(cluster.Parts(), "").evaluations(context.Background(), manifest.UnionIDs(set), set, set, false, san)
	for _, e := range work {
		if e.prefetched == nil {
			t.Fatalf("%s: not listed", e.next.ID)
		}
		if _, _, _, encoded := e.prefetched.Encoded(); !encoded {
			t.Errorf("%s: decoded before its evaluation", e.next.ID)
		}
	}
	if got := san.String("live-only-value-s3"); strings.Contains(got, "live-only-value") {
		t.Errorf("a listed Secret's value is not in the sanitiser before the evaluation: %q", got)
	}
}

// TestServerTextEscaped (issue 40): a server message (a dry-run's denial,
// a webhook's, a warning) holding escape sequences, a 20 000-byte line and
// a Secret value is masked, escaped and bounded in the plan's reasons and
// notes, which every output form and saved plan carries.
func TestServerTextEscaped(t *testing.T) {
	const secret = "server-message-secret-2e7"
	san := redact.NewSanitizer(redact.NewMasker())
	san.AddValue([]byte(secret))
	hostile := secret + " " + injection.All()
	changes := []plan.Change{{ID: manifest.ObjectID{Kind: "ConfigMap", Namespace: "ns", Name: "cfg"}, Action: plan.ActionUpdate,
		Reasons: []plan.Reason{{Path: "data.x" + "\x1b[2J", Message: "admission webhook denied the request: " + hostile, Source: plan.SourceServer}},
		Notes:   []string{"warning from the server: " + hostile}}}
	sanitizeChanges(changes, san)
	c := changes[0]
	for what, text := range map[string]string{"path": c.Reasons[0].Path, "message": c.Reasons[0].Message, "note": c.Notes[0]} {
		if bad := injection.Unsafe(text); bad != "" {
			t.Errorf("%s: %s in %.200q", what, bad, text)
		}
		if strings.Contains(text, secret) {
			t.Errorf("%s holds the Secret value", what)
		}
		if len(text) > redact.MessageLimit+20 {
			t.Errorf("%s: %d bytes, more than %d", what, len(text), redact.MessageLimit)
		}
	}
}
