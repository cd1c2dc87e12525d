package flux

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/chartrepo"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/filetree"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// shopChart is chart shop at version: a ConfigMap and a Deployment showing
// the values (from the HelmRelease, its valuesFrom and their targetPath),
// the release's name and namespace, and labels a post-renderer changes.
func shopChart(t *testing.T, version string) string {
	t.Helper()
	return filepath.Join(filetree.Write(t, map[string]string{
		"shop/Chart.yaml":  "apiVersion: v2\nname: shop\nversion: " + version + "\n",
		"shop/values.yaml": "greeting: chart-default\nimage: {repository: nginx, tag: \"1.0\"}\nreplicas: 1\nextra: {}\n",
		"shop/templates/settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-settings
  labels: {app: shop, chart: "{{ .Chart.Name }}-{{ .Chart.Version }}"}
  annotations: {release-namespace: {{ .Release.Namespace }}}
data:
  greeting: {{ .Values.greeting | quote }}
  release: {{ .Release.Name | quote }}
  upgrade: {{ .Release.IsUpgrade | quote }}
  extra: {{ toJson .Values.extra | quote }}
`,
		"shop/templates/web.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: shop}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec:
      containers:
        - name: web
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
`,
	}), "shop")
}

// shopRelease is the GitOps repository's files: the HelmRepository charts
// of url, the ConfigMap shop-values, and (unless version is "") a
// HelmRelease with a name long enough for helm-controller to shorten it,
// values from the ConfigMap (whole, and one key at a targetPath), its release
// in targetNS and its records in storageNS, and a kustomize post-renderer.
func shopRelease(t *testing.T, ns, url, version, targetNS, storageNS, extra string) map[string]string {
	t.Helper()
	files := map[string]string{
		"source.yaml": fmt.Sprintf("apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: charts, namespace: %s}\nspec: {url: %q, interval: 10m}\n", ns, url),
		"values.yaml": fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: shop-values, namespace: %s}
data:
  values.yaml: |
    greeting: from-valuesFrom
    replicas: 2
    extra: {from: configmap}
  tag: "1.27"
`, ns),
	}
	if version == "" {
		return files
	}
	files["release.yaml"] = fmt.Sprintf(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: %s, namespace: %s}
spec:
  interval: 10m
  targetNamespace: %s
  storageNamespace: %s
  chart:
    spec:
      chart: shop
      version: %q
      sourceRef: {kind: HelmRepository, name: charts}
  valuesFrom:
    - {kind: ConfigMap, name: shop-values}
    - {kind: ConfigMap, name: shop-values, valuesKey: tag, targetPath: image.tag}
  values:
    extra: {from: %s}
  postRenderers:
    - kustomize:
        patches:
          - target: {kind: Deployment, name: web}
            patch: |
              - op: add
                path: /metadata/annotations
                value: {patched-by: kustomize}
        images:
          - {name: nginx, newName: registry.example.com/nginx}
`, longName, ns, targetNS, storageNS, version, extra)
	return files
}

// longName is a HelmRelease name that, after its targetNamespace, is
// longer than Helm's 53 characters: helm-controller shortens the release
// name (ShortenName).
const longName = "a-shop-with-a-name-long-enough-to-be-shortened"

// rendered is one object of an offline plan, as the plan's diff shows it
// created (an install: every line added).
type rendered struct {
	APIVersion, Kind, Namespace, Name string
	Obj                               map[string]any
}

// offlineInstall runs `gitops BASE HEAD -o json` (offline) on a pull request
// that adds one HelmRelease and returns its plan's release name and
// namespace, notes, and the objects it renders.
func offlineInstall(t *testing.T, c *testcluster.Cluster, base, head string) (name, ns string, notes []string, objs []rendered) {
	t.Helper()
	r := tool(c, "gitops", base, head, "-o", "json")
	if r.Code != 0 {
		t.Fatalf("gitops (offline): %s", r)
	}
	var doc struct {
		Releases []struct {
			Plan struct {
				Release struct{ Name, Namespace, Operation string }
				Notes   []string
				Changes []struct {
					APIVersion, Kind, Namespace, Name, Action, Diff string
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || len(doc.Releases) != 1 {
		t.Fatalf("gitops -o json: %v\n%s", err, r.Stdout)
	}
	p := doc.Releases[0].Plan
	if p.Release.Operation != "install" {
		t.Errorf("gitops: the new HelmRelease is planned as %q, want install", p.Release.Operation)
	}
	for _, ch := range p.Changes {
		if ch.Action != "create" {
			t.Errorf("gitops: %s %s/%s is %s, want create (an install)", ch.Kind, ch.Namespace, ch.Name, ch.Action)
			continue
		}
		var doc []string
		for _, line := range strings.Split(ch.Diff, "\n") {
			if strings.HasPrefix(line, "+") && !strings.HasPrefix(line, "+++") {
				doc = append(doc, line[1:])
			}
		}
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(strings.Join(doc, "\n")), &obj); err != nil {
			t.Fatalf("%s %s/%s: the plan's object: %v\n%s", ch.Kind, ch.Namespace, ch.Name, err, ch.Diff)
		}
		objs = append(objs, rendered{APIVersion: ch.APIVersion, Kind: ch.Kind, Namespace: ch.Namespace, Name: ch.Name, Obj: obj})
	}
	return p.Release.Name, p.Release.Namespace, p.Notes, objs
}

// differences returns where want (the plan's object) and got (the live
// object helm-controller applied) differ: every field want sets must have
// its value in got (the server adds defaults and status), and the labels
// and annotations must be the same but for those the API server's
// controllers add.
func differences(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %v, live %v", path, want, got)}
		}
		var out []string
		for k, v := range w {
			out = append(out, differences(path+"."+k, v, g[k])...)
		}
		if path == ".metadata.labels" || path == ".metadata.annotations" {
			for k, v := range g {
				if _, ok := w[k]; !ok && !serverMetadata[k] {
					out = append(out, fmt.Sprintf("%s.%s: not rendered, live %v", path, k, v))
				}
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: %v, live %v", path, want, got)}
		}
		var out []string
		for i := range w {
			out = append(out, differences(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return out
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return []string{fmt.Sprintf("%s: %v, live %v", path, want, got)}
		}
		return nil
	}
}

// serverMetadata are the labels and annotations the API server's
// controllers put on objects, not a client.
var serverMetadata = map[string]bool{"deployment.kubernetes.io/revision": true}

// TestGitOpsEqualsHelmController: for a pull request that adds a
// HelmRelease with valuesFrom (whole, and at a targetPath), values,
// targetNamespace, storageNamespace, a kustomize post-renderer (a patch and
// an image) and a name helm-controller shortens, the objects the offline
// plan renders are, object for object, what helm-controller then applies:
// the same objects, release name and namespace, labels and annotations
// (helm-controller's origin labels included), and every field of the
// render (values, .Release.IsInstall) as live. Then the next pull request,
// a value changed, is planned by `gitops --live` against helm-controller's
// release (found in its storage namespace, applied as helm-controller
// applies: its field manager, conflicts forced): the ConfigMap in place, the
// Deployment a no-op; helm-controller's upgrade then does exactly that.
func TestGitOpsEqualsHelmController(t *testing.T) {
	c := testcluster.Get(t)
	f := Start(t, c)
	target, storage := c.Namespace(t), c.Namespace(t)
	url, _ := chartrepo.Serve(t, shopChart(t, "1.0.0"))
	base := filetree.Write(t, shopRelease(t, f.NS, url, "", target, storage, ""))
	headFiles := shopRelease(t, f.NS, url, "1.0.0", target, storage, "values")
	head := filetree.Write(t, headFiles)

	name, ns, notes, objs := offlineInstall(t, c, base, head)
	f.Apply(t, headFiles["source.yaml"]+"---\n"+headFiles["values.yaml"]+"---\n"+headFiles["release.yaml"])
	h := f.WaitRelease(t, longName, "installed", Ready)
	if len(h.Status.History) == 0 || h.Status.History[0].Name != name || h.Status.History[0].Namespace != ns {
		t.Errorf("helm-controller's release %+v, the plan's %s in %s", h.Status.History, name, ns)
	}
	if h.Status.StorageNamespace != storage || !strings.Contains(strings.Join(notes, "\n"), storage) {
		t.Errorf("storage namespace: helm-controller's %q, want %q named in the plan's notes %q", h.Status.StorageNamespace, storage, notes)
	}

	// The objects helm-controller applied: those of its release's manifest.
	manifest := c.HelmV4(t, "get", "manifest", name, "-n", storage)
	var applied []string
	for _, doc := range strings.Split(manifest, "\n---") {
		var m struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if err := yaml.Unmarshal([]byte(doc), &m); err == nil && m.Kind != "" {
			applied = append(applied, m.Kind+"/"+m.Metadata.Name)
		}
	}
	var planned []string
	for _, o := range objs {
		planned = append(planned, o.Kind+"/"+o.Name)
	}
	slices.Sort(applied)
	slices.Sort(planned)
	if !slices.Equal(applied, planned) {
		t.Errorf("objects: helm-controller applied %v, the plan renders %v", applied, planned)
	}
	for _, o := range objs {
		if o.Namespace != target {
			t.Errorf("%s %s: planned in namespace %q, want the targetNamespace %s", o.Kind, o.Name, o.Namespace, target)
		}
		live := f.Kubectl(t, "get", "-n", o.Namespace, resource(o.APIVersion, o.Kind), o.Name, "-o", "json")
		var got map[string]any
		if err := json.Unmarshal([]byte(live), &got); err != nil {
			t.Fatal(err)
		}
		for _, d := range differences("", o.Obj, got) {
			t.Errorf("%s %s/%s: %s", o.Kind, o.Namespace, o.Name, d)
		}
	}

	// The next pull request changes a value: `gitops --live` plans it
	// against helm-controller's release, then helm-controller upgrades.
	nextFiles := shopRelease(t, f.NS, url, "1.0.0", target, storage, "next")
	next := filetree.Write(t, nextFiles)
	r := tool(c, "gitops", head, next, "--live", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("gitops --live: %s", r)
	}
	var doc struct {
		Releases []struct {
			Plan struct {
				Release struct{ Name, Operation string }
				Changes []struct{ Kind, Name, Action, Class, Diff string }
			}
		}
	}
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || len(doc.Releases) != 1 {
		t.Fatalf("gitops --live -o json: %v\n%s", err, r.Stdout)
	}
	p := doc.Releases[0].Plan
	if p.Release.Name != name || p.Release.Operation != "upgrade" {
		t.Errorf("gitops --live: release %+v, want the upgrade of helm-controller's %s", p.Release, name)
	}
	verdicts := map[string]string{}
	for _, ch := range p.Changes {
		verdicts[ch.Kind] = strings.TrimSpace(ch.Action + " " + ch.Class)
	}
	if want := map[string]string{"ConfigMap": "update in-place", "Deployment": "noop"}; fmt.Sprint(verdicts) != fmt.Sprint(want) {
		t.Errorf("gitops --live verdicts %v, want %v\n%s", verdicts, want, r.Stdout)
	}
	settings := name + "-settings"
	cmUID := f.Kubectl(t, "get", "-n", target, "configmap", settings, "-o", "jsonpath={.metadata.uid}")
	webGen := f.Kubectl(t, "get", "-n", target, "deployment", "web", "-o", "jsonpath={.metadata.generation}")
	f.Apply(t, nextFiles["release.yaml"])
	f.WaitRelease(t, longName, "upgraded", func(h HelmRelease) bool {
		return Ready(h) && len(h.Status.History) > 0 && h.Status.History[0].Version == 2
	})
	// In place: the same ConfigMap with the new value; the Deployment
	// untouched (its generation).
	if uid := f.Kubectl(t, "get", "-n", target, "configmap", settings, "-o", "jsonpath={.metadata.uid}"); uid != cmUID {
		t.Errorf("ConfigMap %s: UID %s -> %s, want updated in place", settings, cmUID, uid)
	}
	if extra := f.Kubectl(t, "get", "-n", target, "configmap", settings, "-o", "jsonpath={.data.extra}"); extra != `{"from":"next"}` {
		t.Errorf("ConfigMap %s: extra %s after helm-controller's upgrade", settings, extra)
	}
	if gen := f.Kubectl(t, "get", "-n", target, "deployment", "web", "-o", "jsonpath={.metadata.generation}"); gen != webGen {
		t.Errorf("Deployment web: generation %s -> %s, want untouched (noop)", webGen, gen)
	}
}

// resource names kind of apiVersion for kubectl unambiguously: kind.group,
// or kind alone in the core group.
func resource(apiVersion, kind string) string {
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		return strings.ToLower(kind) + "." + g
	}
	return strings.ToLower(kind)
}
