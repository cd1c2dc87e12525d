package gitops

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/filetree"
)

// hsChart is a local chart directory of a checkout.
var hsChart = map[string]string{
	"charts/app/Chart.yaml":          "apiVersion: v2\nname: app\nversion: 1.0.0\n",
	"charts/app/templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
	"charts/other/Chart.yaml":        "apiVersion: v2\nname: other\nversion: 1.0.0\n",
	"charts/other/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\n",
}

// hsCheckout writes a checkout of hsChart and files.
func hsCheckout(t *testing.T, files map[string]string) string {
	t.Helper()
	all := map[string]string{}
	for k, v := range hsChart {
		all[k] = v
	}
	for k, v := range files {
		all[k] = v
	}
	return filetree.Write(t, all)
}

const hsBase = `namespaces:
  apps: {}
apps:
  web:
    namespace: apps
    enabled: true
    chart: charts/app
    version: 1.0.0
    valuesFile: values/web.yaml
    set:
      replicas: "2"
`

// steps are each step as OP OBJECT FILE:LINE, or "- OBJECT: DECISION"
// for one that changes nothing.
func hsSteps(t *testing.T, base, head map[string]string, opts HelmsmanOptions) ([]string, []HelmsmanStep, error) {
	t.Helper()
	b, h := hsCheckout(t, base), hsCheckout(t, head)
	steps, _, err := HelmsmanChanges(b, h, opts)
	var out []string
	for _, s := range steps {
		rel, _ := filepath.Rel(h, s.File)
		if s.Op == "" {
			out = append(out, "- "+s.Ref.String()+" "+rel+":"+strconv.Itoa(s.Line))
			continue
		}
		out = append(out, s.Op+" "+s.Ref.String()+" "+rel+":"+strconv.Itoa(s.Line))
	}
	return out, steps, err
}

func TestHelmsmanChanges(t *testing.T) {
	values := map[string]string{"values/web.yaml": "image: {tag: v1}\n"}
	with := func(dsf string, extra map[string]string) map[string]string {
		m := map[string]string{"helmsman.yaml": dsf}
		for k, v := range values {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, tt := range []struct {
		name       string
		base, head map[string]string
		opts       HelmsmanOptions
		want       []string
		err        string
	}{
		{name: "nothing changes", base: with(hsBase, nil), head: with(hsBase, nil)},
		{name: "comments, ordering and priority plan nothing",
			base: with(hsBase, nil),
			head: with("# reordered\napps:\n  web:\n    priority: -3\n    set: {replicas: \"2\"}\n    version: 1.0.0\n    chart: charts/app\n    enabled: true\n    valuesFile: values/web.yaml\n    namespace: apps\nnamespaces: {apps: {}}\n", nil)},
		{name: "a set value is an upgrade at its line",
			base: with(hsBase, nil), head: with(strings.Replace(hsBase, `replicas: "2"`, `replicas: "3"`, 1), nil),
			want: []string{"upgrade HelmsmanApp apps/web helmsman.yaml:11"}},
		{name: "a values file's change is located in it",
			base: with(hsBase, nil), head: with(hsBase, map[string]string{"values/web.yaml": "# tag\nimage: {tag: v2}\n"}),
			want: []string{"upgrade HelmsmanApp apps/web values/web.yaml:1"}},
		{name: "a new app is an install",
			base: with(hsBase, nil), head: with(hsBase+"  db:\n    namespace: apps\n    enabled: true\n    chart: charts/other\n    version: 1.0.0\n", nil),
			want: []string{"install HelmsmanApp apps/db helmsman.yaml:12"}},
		{name: "a disabled app is uninstalled",
			base: with(hsBase, nil), head: with(strings.Replace(hsBase, "enabled: true", "enabled: false", 1), nil),
			want: []string{"uninstall HelmsmanApp apps/web helmsman.yaml:6"}},
		{name: "enabled left out is false",
			base: with(hsBase, nil), head: with(strings.Replace(hsBase, "    enabled: true\n", "", 1), nil),
			want: []string{"uninstall HelmsmanApp apps/web helmsman.yaml:6"}},
		{name: "a removed app in a namespace of the DSF is uninstalled",
			base: with(hsBase+"  db:\n    namespace: apps\n    enabled: true\n    chart: charts/other\n    version: 1.0.0\n", nil), head: with(hsBase, nil),
			want: []string{"uninstall HelmsmanApp apps/db helmsman.yaml:11"}},
		{name: "with --keep-untracked-releases it stays",
			base: with(hsBase+"  db:\n    namespace: apps\n    enabled: true\n    chart: charts/other\n    version: 1.0.0\n", nil), head: with(hsBase, nil),
			opts: HelmsmanOptions{KeepUntracked: true},
			want: []string{"- HelmsmanApp apps/db helmsman.yaml:11"}},
		{name: "a protected release is left alone",
			base: with(hsBase, nil), head: with(strings.Replace(hsBase, `replicas: "2"`, `replicas: "3"`, 1)+"    protected: true\n", nil),
			want: []string{"- HelmsmanApp apps/web helmsman.yaml:11"}},
		{name: "so is one of a protected namespace",
			base: with(hsBase, nil), head: with(strings.Replace(strings.Replace(hsBase, "apps: {}", "apps: {protected: true}", 1), `replicas: "2"`, `replicas: "3"`, 1), nil),
			want: []string{"- HelmsmanApp apps/web helmsman.yaml:11"}},
		{name: "an app's key renamed, its release the same, is the same release",
			base: with(hsBase, nil), head: with(strings.Replace(strings.Replace(hsBase, "  web:\n", "  frontend:\n    name: web\n", 1), `replicas: "2"`, `replicas: "3"`, 1), nil),
			want: []string{"upgrade HelmsmanApp apps/frontend helmsman.yaml:4"}},
		{name: "a protected app disabled is left alone",
			base: with(hsBase, nil), head: with(strings.Replace(hsBase, "enabled: true", "enabled: false", 1)+"    protected: true\n", nil),
			want: []string{"- HelmsmanApp apps/web helmsman.yaml:6"}},
		{name: "a namespace move is an uninstall and an install",
			base: with(strings.Replace(hsBase, "apps: {}", "apps: {}\n  web: {}", 1), nil), head: with(strings.Replace(strings.Replace(hsBase, "apps: {}", "apps: {}\n  web: {}", 1), "namespace: apps", "namespace: web", 1), nil),
			want: []string{"uninstall HelmsmanApp apps/web helmsman.yaml:6", "install HelmsmanApp web/web helmsman.yaml:6"}},
		{name: "a move out of the DSF's namespaces leaves the old release",
			base: with(hsBase, nil), head: with(strings.Replace(strings.Replace(hsBase, "apps: {}", "web: {}", 1), "namespace: apps", "namespace: web", 1), nil),
			want: []string{"- HelmsmanApp apps/web helmsman.yaml:2", "install HelmsmanApp web/web helmsman.yaml:5"}},
		{name: "a postRenderer is refused by name",
			base: with(hsBase, nil), head: with(strings.Replace(hsBase, `replicas: "2"`, `replicas: "3"`, 1)+"    postRenderer: ./render.sh\n", nil),
			err: `apps.web.postRenderer: "./render.sh" is an executable the pull request names`},
		{name: "secrets files are refused by name",
			base: with(hsBase, nil), head: with(strings.Replace(hsBase, `replicas: "2"`, `replicas: "3"`, 1)+"    secretsFile: values/secrets.yaml\n", map[string]string{"values/secrets.yaml": "sops: {}\n"}),
			err: "apps.web.secretsFile: values/secrets.yaml is encrypted"},
		{name: "an unchanged app's secrets file is not read",
			base: with(hsBase+"    secretsFile: values/secrets.yaml\n", map[string]string{"values/secrets.yaml": "sops: {}\n"}),
			head: with(hsBase+"    secretsFile: values/secrets.yaml\n", map[string]string{"values/secrets.yaml": "sops: {}\n"})},
		{name: "a helmFlag that changes the render is refused",
			base: with(hsBase, nil), head: with(strings.Replace(hsBase, `replicas: "2"`, `replicas: "3"`, 1)+"    helmFlags: [--wait, --timeout, 5m, --set=a=b]\n", nil),
			err: `apps.web.helmFlags: "--set=a=b" changes what Helm renders`},
		{name: "--force in helmFlags is planned",
			base: with(hsBase, nil), head: with(strings.Replace(hsBase, `replicas: "2"`, `replicas: "3"`, 1)+"    helmFlags: [--force]\n", nil),
			want: []string{"upgrade HelmsmanApp apps/web helmsman.yaml:11"}},
		{name: "a values file out of the checkout is refused",
			base: with(hsBase, nil), head: with(strings.Replace(hsBase, "values/web.yaml", "../../../etc/passwd.yaml", 1), nil),
			err: "outside the checkout"},
		{name: "a values file by URL is refused",
			base: with(hsBase, nil), head: with(strings.Replace(hsBase, "values/web.yaml", "https://example.com/v.yaml", 1), nil),
			err: `a file by URL or in a cloud bucket is not read`},
		{name: "an unset environment variable names itself and its line",
			base: with(hsBase, nil), head: with(strings.Replace(hsBase, "version: 1.0.0", "version: ${CHART_VERSION}", 1), nil),
			err: "helmsman.yaml:8: ${CHART_VERSION} is used as an environment variable but is unset"},
		{name: "a DSF without apps uninstalls them all",
			base: with(hsBase, nil), head: with("namespaces: {apps: {}}\n", nil),
			want: []string{"uninstall HelmsmanApp apps/web helmsman.yaml:1"}},
		{name: "a namespace the DSF does not define is refused, as Helmsman refuses it",
			base: with(hsBase, nil), head: with(strings.Replace(hsBase, "namespace: apps", "namespace: other", 1), nil),
			err: `apps.web.namespace: "other" is not among the DSF's namespaces`},
		{name: "a DSF that is not valid is an error naming it",
			base: with(hsBase, nil), head: with(hsBase+"  db: [oops\n", nil),
			err: "helmsman.yaml"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := hsSteps(t, tt.base, tt.head, tt.opts)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q (steps %v)", err, tt.err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("steps\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestHelmsmanEnv: variables substituted as Helmsman substitutes them
// ($VAR, ${VAR}, $$ a dollar, a value naming another expanded again, a
// commented line not validated), into values files only with
// --subst-env-values; the values they put in are the ones to mask.
func TestHelmsmanEnv(t *testing.T) {
	env := map[string]string{"TAG": "v7", "PASSWORD": "s3cr3t-from-env", "INNER": "$TAG", "NS": "apps"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	dsf := `# ${NOT_SET} in a comment is not validated
namespaces: {apps: {}}
apps:
  web:
    namespace: ${NS}
    enabled: true
    chart: charts/app
    version: 1.0.0
    valuesFile: values.yaml
    set:
      password: $PASSWORD
      price: "$$5"
      inner: $INNER
`
	dir := hsCheckout(t, map[string]string{"dsf.yaml": dsf, "values.yaml": "fromValues: $TAG\n"})
	for _, subst := range []bool{false, true} {
		sts, err := LoadHelmsman(dir, HelmsmanOptions{LookupEnv: lookup, SubstEnvValues: subst})
		if err != nil {
			t.Fatal(err)
		}
		if len(sts) != 1 || sts[0].ID != "dsf.yaml" {
			t.Fatalf("states %+v", sts)
		}
		h := &hsSide{side: &Side{Root: dir}, opts: HelmsmanOptions{LookupEnv: lookup, SubstEnvValues: subst}, st: sts[0], sub: &substituter{opts: HelmsmanOptions{LookupEnv: lookup, SubstEnvValues: subst}}}
		apps, err := h.resolveApps()
		if err != nil {
			t.Fatal(err)
		}
		r := apps["web"].release
		wantTag := "$TAG"
		if subst {
			wantTag = "v7"
		}
		if r.Namespace != "apps" || r.Values["password"] != "s3cr3t-from-env" || r.Values["price"] != "$5" || r.Values["inner"] != "v7" || r.Values["fromValues"] != wantTag {
			t.Errorf("subst-env-values %v: namespace %q, values %v", subst, r.Namespace, r.Values)
		}
		masked := map[string]bool{}
		for _, v := range sts[0].maskable() {
			masked[string(v)] = true
		}
		if !masked["s3cr3t-from-env"] || masked["apps"] {
			t.Errorf("masked %v: want the password, not the namespace", masked)
		}
	}
	if _, err := LoadHelmsman(dir, HelmsmanOptions{LookupEnv: lookup, NoEnvSubst: true}); err != nil {
		t.Fatalf("--no-env-subst: %v", err)
	}
	self := func(k string) (string, bool) { return "$SELF", k == "SELF" }
	loop := hsCheckout(t, map[string]string{"dsf.yaml": strings.Replace(dsf, "$PASSWORD", "$SELF", 1)})
	if _, err := LoadHelmsman(loop, HelmsmanOptions{LookupEnv: func(k string) (string, bool) {
		if v, ok := self(k); ok {
			return v, ok
		}
		return lookup(k)
	}}); err == nil || !strings.Contains(err.Error(), "SELF") {
		t.Errorf("a variable naming itself: %v, want an error naming it", err)
	}
}

// TestHelmsmanMerge: `helmsman -f a -f b` merges b into a: set fields of b
// win, lists are appended, maps merged key by key, a bool only when set;
// paths resolved in each file's directory.
func TestHelmsmanMerge(t *testing.T) {
	dir := hsCheckout(t, map[string]string{
		"a.toml": `[namespaces]
[namespaces.apps]
[apps.web]
namespace = "apps"
enabled = true
chart = "charts/app"
version = "1.0.0"
valuesFiles = ["a.yaml"]
[apps.web.set]
x = "1"
z = "1"
`,
		"a.yaml":          "fromA: true\n",
		"env/prod.yaml":   "apps:\n  web:\n    version: 2.0.0\n    valuesFiles: [values.yaml]\n    set: {z: \"2\"}\n",
		"env/values.yaml": "fromProd: true\n",
	})
	sts, err := LoadHelmsman(dir, HelmsmanOptions{Files: []string{"a.toml", "env/prod.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	a := sts[0].state.Apps["web"]
	if a.Version != "2.0.0" || !a.Enabled.Value || a.Set["x"] != "1" || a.Set["z"] != "2" || len(a.ValuesFiles) != 2 ||
		a.ValuesFiles[0] != filepath.Join(dir, "a.yaml") || a.ValuesFiles[1] != filepath.Join(dir, "env", "values.yaml") {
		t.Errorf("merged app %+v", a)
	}
	// Helmsman's --spec file names the same files.
	spec := hsCheckout(t, map[string]string{"spec.yaml": "stateFiles:\n  - path: a.toml\n  - path: env/prod.yaml\n"})
	for _, f := range []string{"a.toml", "a.yaml", "env/prod.yaml", "env/values.yaml"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(spec, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(spec, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fromSpec, err := LoadHelmsman(spec, HelmsmanOptions{Spec: "spec.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	if got := fromSpec[0].state.Apps["web"]; fromSpec[0].ID != "a.toml + env/prod.yaml" || got.Version != "2.0.0" || len(got.ValuesFiles) != 2 {
		t.Errorf("--spec: state %s, app %+v", fromSpec[0].ID, got)
	}
	if _, err := LoadHelmsman(spec, HelmsmanOptions{Files: []string{"/etc/helmsman.yaml"}}); err == nil || !strings.Contains(err.Error(), "out of the checkout") {
		t.Errorf("an absolute DSF path: %v", err)
	}
	// Found by shape, each file is a state of its own (prod.yaml's app
	// names a version: a DSF).
	found, err := LoadHelmsman(dir, HelmsmanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range found {
		ids = append(ids, s.ID)
	}
	if strings.Join(ids, ",") != "a.toml,env/prod.yaml" {
		t.Errorf("DSFs found %v", ids)
	}
}

// TestHelmsmanLinksOut: a DSF, a values file or a chart that leads out of
// the checkout by a link is refused, naming the link, and nothing out
// there is read.
func TestHelmsmanLinksOut(t *testing.T) {
	outside := filetree.Write(t, map[string]string{"secret.yaml": "apps:\n  x: {chart: c}\n", "values.yaml": "a: 1\n"})
	for _, tt := range []struct{ name, link, target, dsf string }{
		{"a DSF", "dsf.yaml", filepath.Join(outside, "secret.yaml"), ""},
		{"a values file", "values/web.yaml", filepath.Join(outside, "values.yaml"), hsBase},
		{"a chart", "charts/app", outside, hsBase},
	} {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"values/web.yaml": "a: 1\n"}
			if tt.dsf != "" {
				files["helmsman.yaml"] = tt.dsf
			}
			dir := hsCheckout(t, files)
			link := filepath.Join(dir, filepath.FromSlash(tt.link))
			if err := os.RemoveAll(link); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(tt.target, link); err != nil {
				t.Fatal(err)
			}
			_, _, err := HelmsmanChanges(hsCheckout(t, nil), dir, HelmsmanOptions{})
			if err == nil || !strings.Contains(err.Error(), "outside the checkout") {
				t.Errorf("error %v, want one saying the link leads outside the checkout", err)
			}
		})
	}
}
