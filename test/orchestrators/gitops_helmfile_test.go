package orchestrators

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/cli"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/gitops"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/chartrepo"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/filetree"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/shimtest"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// helmfileRepo is a checkout of a helmfile state with two environments,
// each with its own tag, a values.yaml.gotmpl reading it, and a local
// chart of one Deployment.
func helmfileRepo(t *testing.T, stagingTag, productionTag string) string {
	t.Helper()
	dir := filetree.Write(t, map[string]string{
		"helmfile.yaml": `environments:
  staging:
    values: [env/staging.yaml]
  production:
    values: [env/production.yaml]
---
releases:
  - name: web
    namespace: web
    chart: ./charts/web
    values:
      - values.yaml.gotmpl
`,
		"values.yaml.gotmpl":  "image:\n  tag: {{ .Values.tag }}\n",
		"env/staging.yaml":    "tag: " + stagingTag + "\n",
		"env/production.yaml": "tag: " + productionTag + "\n",
	})
	// The chart of one Deployment whose image tag is image.tag.
	if err := os.CopyFS(filepath.Join(dir, "charts", "web"), os.DirFS(chartrepo.WebChart(t))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// realHelmOnPath puts the real Helm 3 first on PATH, with helm homes of
// the test: helmfile runs helm from PATH.
func realHelmOnPath(t *testing.T) {
	t.Helper()
	c := testcluster.Get(t)
	real := t.TempDir()
	if err := os.Symlink(c.Helm3, filepath.Join(real, "helm")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", real+string(os.PathListSeparator)+"/usr/bin"+string(os.PathListSeparator)+"/bin")
	for _, kv := range shimtest.HelmHome(t.TempDir()) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// objects are the Kubernetes objects of a multi-document manifest, each as
// canonical JSON, sorted.
func objects(t *testing.T, manifest string) []string {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(manifest))
	var out []string
	for {
		var m map[string]interface{}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("%v\n%s", err, manifest)
		}
		if m["kind"] == nil {
			continue
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	sort.Strings(out)
	return out
}

// TestGitOpsHelmfile: the pull request changes the production
// environment's tag; gitops, rendering both checkouts with real helmfile
// (an environment at a time), plans the production release alone (its
// Deployment's rolling update), and the render it plans is, object for
// object, what `helmfile template` prints for that environment.
func TestGitOpsHelmfile(t *testing.T) {
	hf := helmfile(t)
	realHelmOnPath(t)
	base, head := helmfileRepo(t, "v1", "v1"), helmfileRepo(t, "v1", "v2")

	var out, errOut bytes.Buffer
	code := cli.Execute("helm-safe-upgrade", []string{"gitops", base, head, "--helmfile", hf,
		"--helmfile-environment", "staging", "--helmfile-environment", "production", "--detailed-exitcode", "-o", "json"},
		iostreams.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, cli.BuildInfo{Version: "v0.0.0-test"})
	if code != cli.ExitPending {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, errOut.String(), out.String())
	}
	var doc struct {
		Releases []struct {
			Object string          `json:"object"`
			File   string          `json:"file"`
			Line   int             `json:"line"`
			Plan   json.RawMessage `json:"plan"`
		} `json:"releases"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(doc.Releases) != 1 || doc.Releases[0].Object != "HelmfileRelease web/web@production" {
		t.Fatalf("releases %+v, want the production release alone", doc.Releases)
	}
	var p struct {
		Changes []struct{ Kind, Namespace, Name, Action, Class string }
	}
	if err := json.Unmarshal(doc.Releases[0].Plan, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Changes) != 1 || p.Changes[0].Kind != "Deployment" || p.Changes[0].Action != "update" || p.Changes[0].Class != "rolling" {
		t.Errorf("changes %+v, want the Deployment's rolling update", p.Changes)
	}
	if !strings.HasSuffix(doc.Releases[0].File, "helmfile.yaml") || doc.Releases[0].Line != 8 {
		t.Errorf("located at %s:%d, want helmfile.yaml:8 (the release's name)", doc.Releases[0].File, doc.Releases[0].Line)
	}

	// Object for object, what helmfile template prints.
	r := shimtest.Run(t, head, os.Environ(), hf, "helmfile", "--environment", "production", "template")
	if r.Code != 0 {
		t.Fatalf("helmfile template:\n%s", r)
	}
	rels, err := gitops.RenderHelmfile(context.Background(), hf, head, t.TempDir(), gitops.HelmfileOptions{Environments: []string{"production"}})
	if err != nil {
		t.Fatal(err)
	}
	got, want := objects(t, rels["production/web/web"].Manifest), objects(t, r.Stdout)
	if len(want) == 0 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("planned render\n%s\nhelmfile template\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestGitOpsHelmfileDecisions: what helmfile apply does with the head's
// state, planned with real helmfile: a release marked installed: false is
// uninstalled (its objects deleted), a release the head no longer names
// stays (a note, helmfile tracks no release), a changed release's needs
// are named, a change that renders the same plans nothing, and a state
// helmfile cannot render is exit 1 naming the command.
func TestGitOpsHelmfileDecisions(t *testing.T) {
	hf := helmfile(t)
	realHelmOnPath(t)
	state := func(releases string) string {
		return "releases:\n" + releases
	}
	web := "  - name: web\n    namespace: web\n    chart: ./charts/web\n"
	api := "  - name: api\n    namespace: web\n    chart: ./charts/web\n"
	gitops := func(base, head string) (string, string, int) {
		t.Helper()
		b, h := helmfileRepo(t, "v1", "v1"), helmfileRepo(t, "v1", "v1")
		for dir, s := range map[string]string{b: base, h: head} {
			if err := os.WriteFile(filepath.Join(dir, "helmfile.yaml"), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var out, errOut bytes.Buffer
		code := cli.Execute("helm-safe-upgrade", []string{"gitops", b, h, "--helmfile", hf, "--detailed-exitcode"},
			iostreams.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, cli.BuildInfo{Version: "v0.0.0-test"})
		return out.String(), errOut.String(), code
	}

	out, errOut, code := gitops(state(web+api), state(web+"    installed: false\n"))
	if code != cli.ExitPending {
		t.Fatalf("exit %d, want 3\n%s\n%s", code, errOut, out)
	}
	for _, want := range []string{
		"=== HelmfileRelease web/api@default", "helmfile leaves release api in namespace web as it is",
		"=== HelmfileRelease web/web@default", "installed: false in the head: helmfile apply uninstalls release web", "Deployment  web/web         delete",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}

	// needs: the order helmfile applies the changed release in.
	out, errOut, code = gitops(state(web+api), state(web+api+"    needs: [web/web]\n    set: [{name: image.tag, value: v9}]\n"))
	if code != cli.ExitPending || !strings.Contains(out, "helmfile apply upgrades release api in namespace web (chart ./charts/web → ./charts/web), after web/web (needs)") {
		t.Errorf("a release with needs: exit %d\n%s\n%s", code, errOut, out)
	}

	// Comments and a label: helmfile renders the same.
	if out, errOut, code := gitops(state(web), "# the web tier\n"+state(web+"    labels: {tier: front}\n")); code != cli.ExitOK || strings.Contains(out, "HelmfileRelease") {
		t.Errorf("a change that renders the same: exit %d\n%s\n%s", code, errOut, out)
	}

	// A state helmfile cannot render: exit 1 naming the command.
	if out, errOut, code := gitops(state(web), state("  - name: web\n    chart: ./charts/missing\n")); code != cli.ExitError || !strings.Contains(errOut, "head: helmfile --environment default") {
		t.Errorf("an unrenderable head: exit %d\n%s\n%s", code, errOut, out)
	}
}
