package cli

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/cli/values"

	"github.com/safe-upgrade/helm-safe-upgrade/pkg/iostreams"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/render"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/verb"
)

// The release the flag tests set Helm's actions up for.
const (
	relName = "app"
	relNS   = "demo"
)

// TestHelmUpgradeFlagsReachTheAction parses each flag of helm upgrade v3.22
// that changes the render or the apply and checks that it reaches Helm's
// upgrade action and, where `helm upgrade --install` passes it on, the
// install action.
func TestHelmUpgradeFlagsReachTheAction(t *testing.T) {
	tests := []struct {
		args    []string
		upgrade func(*action.Upgrade) bool
		// install is nil where cmd/helm/upgrade.go does not pass the flag
		// to the install of `helm upgrade --install`.
		install func(*action.Install) bool
	}{
		{[]string{"--recreate-pods"}, func(u *action.Upgrade) bool { return u.Recreate }, nil},
		{[]string{"--disable-openapi-validation"},
			func(u *action.Upgrade) bool { return u.DisableOpenAPIValidation },
			func(i *action.Install) bool { return i.DisableOpenAPIValidation }},
		{[]string{"--wait-for-jobs"},
			func(u *action.Upgrade) bool { return u.WaitForJobs },
			func(i *action.Install) bool { return i.WaitForJobs }},
		{[]string{"--history-max", "3"}, func(u *action.Upgrade) bool { return u.MaxHistory == 3 }, nil},
		{[]string{"--cleanup-on-fail"}, func(u *action.Upgrade) bool { return u.CleanupOnFail }, nil},
		{[]string{"--render-subchart-notes"},
			func(u *action.Upgrade) bool { return u.SubNotes },
			func(i *action.Install) bool { return i.SubNotes }},
		{[]string{"--hide-notes"},
			func(u *action.Upgrade) bool { return u.HideNotes },
			func(i *action.Install) bool { return i.HideNotes }},
		{[]string{"-l", "team=db,tier=null"},
			func(u *action.Upgrade) bool { return u.Labels["team"] == "db" && u.Labels["tier"] == "null" },
			func(i *action.Install) bool { return i.Labels["team"] == "db" && i.Labels["tier"] == "null" }},
		{[]string{"--labels", "team=db"},
			func(u *action.Upgrade) bool { return u.Labels["team"] == "db" },
			func(i *action.Install) bool { return i.Labels["team"] == "db" }},
		{[]string{"--dependency-update"},
			func(u *action.Upgrade) bool { return u.DependencyUpdate },
			func(i *action.Install) bool { return i.DependencyUpdate }},
		{[]string{"--enable-dns"},
			func(u *action.Upgrade) bool { return u.EnableDNS },
			func(i *action.Install) bool { return i.EnableDNS }},
		{[]string{"--take-ownership"},
			func(u *action.Upgrade) bool { return u.TakeOwnership },
			func(i *action.Install) bool { return i.TakeOwnership }},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var o render.Options
			fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
			addRenderFlags(fs, &o)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			cfg := new(action.Configuration)
			if up := o.NewUpgrade(cfg, relNS); !tt.upgrade(up) {
				t.Errorf("not on the upgrade action: %+v", up)
			}
			if tt.install != nil && !tt.install(o.NewInstall(cfg, relName, relNS)) {
				t.Errorf("not on the install action")
			}
			// Unset, none of them is on.
			var zero render.Options
			if tt.upgrade(zero.NewUpgrade(cfg, relNS)) {
				t.Errorf("on the upgrade action without the flag")
			}
		})
	}
}

// TestHideSecretParsed: --hide-secret reaches the options (render's
// TestHideSecretStaysOutOfTheRender checks it goes no further).
func TestHideSecretParsed(t *testing.T) {
	var o render.Options
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	addRenderFlags(fs, &o)
	if err := fs.Parse([]string{"--hide-secret"}); err != nil {
		t.Fatal(err)
	}
	if !o.HideSecret {
		t.Fatal("--hide-secret not parsed")
	}
}

func TestHistoryMaxDefault(t *testing.T) {
	for env, want := range map[string]int{"": 10, "4": 4, "0": 0} {
		if env == "" {
			os.Unsetenv("HELM_MAX_HISTORY")
		} else {
			t.Setenv("HELM_MAX_HISTORY", env)
		}
		var o render.Options
		addRenderFlags(pflag.NewFlagSet("x", pflag.ContinueOnError), &o)
		if o.MaxHistory != want {
			t.Errorf("HELM_MAX_HISTORY=%q: --history-max defaults to %d, want %d", env, o.MaxHistory, want)
		}
	}
}

// TestHelmClientFlags: Helm's client-rate flags are the command's, and
// reach the settings the run's Config is built from (pkg/verb's
// TestClientRate checks the Config then honours them).
func TestHelmClientFlags(t *testing.T) {
	t.Setenv("HELM_QPS", "")
	t.Setenv("HELM_BURST_LIMIT", "")
	o := NewUpgradeOptions(iostreams.Streams{})
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	o.addFlagsTo(fs)
	if err := fs.Parse([]string{"--qps", "2", "--burst-limit", "1", "--kubeconfig", "/k"}); err != nil {
		t.Fatal(err)
	}
	if o.Settings.QPS != 2 || o.Settings.BurstLimit != 1 || o.Settings.KubeConfig != "/k" {
		t.Errorf("--qps 2 --burst-limit 1 --kubeconfig /k: settings QPS %v, burst %d, kubeconfig %q", o.Settings.QPS, o.Settings.BurstLimit, o.Settings.KubeConfig)
	}
}

func TestRenderFlagsParse(t *testing.T) {
	var o render.Options
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	addRenderFlags(fs, &o)
	for _, n := range []string{"namespace", "kube-context", "kubeconfig"} {
		if fs.Lookup(n) != nil {
			t.Errorf("addRenderFlags registered --%s", n)
		}
	}
	if o.Timeout != 5*time.Minute {
		t.Errorf("default timeout = %v", o.Timeout)
	}
	if o.ServerSide != render.ServerSideAuto || o.ForceConflicts {
		t.Errorf("defaults: --server-side=%q --force-conflicts=%v", o.ServerSide, o.ForceConflicts)
	}
	args := []string{
		"-f", "a.yaml,b.yaml", "--values", "c.yaml",
		"--set", "a=1,b=2", "--set", "c=3", "--set-string", "s=x", "--set-file", "f=p", "--set-json", `j={"k":1}`, "--set-literal", "l=a,b",
		"--version", "^1.0", "--repo", "https://charts.example", "--devel", "-i",
		"--reuse-values", "--reset-values", "--reset-then-reuse-values",
		"--post-renderer", "kustomize", "--post-renderer-args", "a,b", "--post-renderer-args", "c",
		"--skip-crds", "--skip-schema-validation", "--no-hooks", "--timeout", "90s", "--wait", "--atomic", "--description", "why",
		"--kube-version", "1.30.1", "-a", "x.example/v1,y.example/v1", "--api-versions", "z.example/v1/Z",
		"--history-max", "7",
		"--server-side", "true", "--force-conflicts",
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	want := render.Options{
		Values: values.Options{
			ValueFiles: []string{"a.yaml", "b.yaml", "c.yaml"}, Values: []string{"a=1,b=2", "c=3"},
			StringValues: []string{"s=x"}, FileValues: []string{"f=p"}, JSONValues: []string{`j={"k":1}`}, LiteralValues: []string{"l=a,b"},
		},
		Version: "^1.0", Devel: true, Install: true,
		ReuseValues: true, ResetValues: true, ResetThenReuseValues: true,
		PostRenderer: "kustomize", PostRendererArgs: []string{"a,b", "c"},
		SkipCRDs: true, SkipSchemaValidation: true, DisableHooks: true,
		Timeout: 90 * time.Second, Wait: true, Atomic: true, Description: "why",
		KubeVersion: "1.30.1", APIVersions: []string{"x.example/v1", "y.example/v1", "z.example/v1/Z"},
		MaxHistory: 7,
		ServerSide: "true", ForceConflicts: true,
	}
	want.Repo = o.Repo // keyring default depends on $HOME
	if o.Repo.RepoURL != "https://charts.example" {
		t.Errorf("repo = %q", o.Repo.RepoURL)
	}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("parsed\n%#v\nwant\n%#v", o, want)
	}
}

// TestApplyFlags: --force-replace (Helm 4) and --force (Helm 3) both ask
// for Force; neither is on by default.
func TestApplyFlags(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--force-replace"}, true},
		{[]string{"--force"}, true},
		{[]string{"--force-replace=false"}, false},
	}
	for _, tt := range tests {
		var m verb.ApplyMode
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		addApplyFlags(fs, &m)
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		if m.Force != tt.want {
			t.Errorf("%v: Force %v, want %v", tt.args, m.Force, tt.want)
		}
	}
}
