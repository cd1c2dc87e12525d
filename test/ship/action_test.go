package ship

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// action is the part of action.yml that a runner reads.
type action struct {
	Inputs map[string]struct {
		Required bool   `json:"required"`
		Default  string `json:"default"`
	} `json:"inputs"`
	Outputs map[string]struct {
		Value string `json:"value"`
	} `json:"outputs"`
	Runs struct {
		Using string       `json:"using"`
		Steps []actionStep `json:"steps"`
	} `json:"runs"`
}

// actionStep is one step of a composite action.
type actionStep struct {
	Name  string            `json:"name"`
	ID    string            `json:"id"`
	Shell string            `json:"shell"`
	Run   string            `json:"run"`
	Env   map[string]string `json:"env"`
}

// actionRun is how one run of the action ended.
type actionRun struct {
	// Failed is the step that failed ("" when all passed); Code its exit code.
	Failed string
	Code   int
	// Outputs are the action's outputs; Summary is the job summary written.
	Outputs map[string]string
	Summary string
	// Log is every step's stdout and stderr.
	Log string
	// Path is what the steps added to GITHUB_PATH, in order.
	Path []string
}

// expression matches a GitHub Actions expression.
var expression = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// runAction runs action.yml's composite steps the way a GitHub runner does —
// `bash --noprofile --norc -eo pipefail` per step, GITHUB_ACTION_PATH,
// GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, GITHUB_PATH (its folders put first on
// PATH for the later steps) and RUNNER_TEMP set, expressions in env
// evaluated — with the given inputs. Expressions may only read inputs and
// github.action_path, and only in env: (never spliced into a script, where a
// value could inject shell code); anything else fails the test.
func runAction(t *testing.T, root string, env []string, inputs map[string]string) actionRun {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var a action
	if err := yaml.Unmarshal(data, &a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if a.Runs.Using != "composite" {
		t.Fatalf("action.yml runs.using = %q, want composite", a.Runs.Using)
	}
	for name := range inputs {
		if _, ok := a.Inputs[name]; !ok {
			t.Fatalf("action.yml has no input %q", name)
		}
	}
	eval := func(s string) string {
		return expression.ReplaceAllStringFunc(s, func(m string) string {
			expr := expression.FindStringSubmatch(m)[1]
			switch {
			case expr == "github.action_path":
				return root
			case strings.HasPrefix(expr, "inputs."):
				name := strings.TrimPrefix(expr, "inputs.")
				in, ok := a.Inputs[name]
				if !ok {
					t.Fatalf("action.yml reads undeclared input %q", name)
				}
				if v, ok := inputs[name]; ok {
					return v
				}
				return in.Default
			}
			t.Fatalf("action.yml: expression %q is not supported here", m)
			return ""
		})
	}

	tmp := t.TempDir()
	summary := filepath.Join(tmp, "summary.md")
	run := actionRun{Outputs: map[string]string{}}
	stepOutputs := map[string]map[string]string{}
	var log strings.Builder
	for i, step := range a.Runs.Steps {
		if step.Shell != "bash" {
			t.Fatalf("step %q: shell %q, want bash", step.Name, step.Shell)
		}
		if strings.Contains(step.Run, "${{") {
			t.Fatalf("step %q splices an expression into its script; pass it through env:", step.Name)
		}
		script := filepath.Join(tmp, "step.sh")
		if err := os.WriteFile(script, []byte(step.Run), 0o644); err != nil {
			t.Fatal(err)
		}
		outFile := filepath.Join(tmp, "output-"+strconv.Itoa(i))
		pathFile := filepath.Join(tmp, "path-"+strconv.Itoa(i))
		stepEnv := withEnv(env,
			"GITHUB_ACTIONS=true",
			"GITHUB_ACTION_PATH="+root,
			"GITHUB_OUTPUT="+outFile,
			"GITHUB_PATH="+pathFile,
			"GITHUB_STEP_SUMMARY="+summary,
			"RUNNER_TEMP="+tmp,
			"PATH="+prependPath(env, run.Path),
		)
		for k, v := range step.Env {
			stepEnv = append(stepEnv, k+"="+eval(v))
		}
		r := cmd{Env: stepEnv, Dir: tmp}.run(t, "bash", "--noprofile", "--norc", "-eo", "pipefail", script)
		log.WriteString("--- " + step.Name + "\n" + r.Stdout + r.Stderr)
		stepOutputs[step.ID] = readOutputs(t, outFile)
		if b, err := os.ReadFile(pathFile); err == nil {
			run.Path = append(run.Path, strings.Fields(string(b))...)
		}
		if r.Code != 0 {
			run.Failed, run.Code = step.Name, r.Code
			break
		}
	}
	for name, out := range a.Outputs {
		m := expression.FindStringSubmatch(out.Value)
		parts := strings.Split(m[1], ".")
		if len(parts) != 4 || parts[0] != "steps" || parts[2] != "outputs" {
			t.Fatalf("output %s: value %q, want ${{ steps.ID.outputs.NAME }}", name, out.Value)
		}
		run.Outputs[name] = stepOutputs[parts[1]][parts[3]]
	}
	if b, err := os.ReadFile(summary); err == nil {
		run.Summary = string(b)
	}
	run.Log = log.String()
	return run
}

// prependPath returns env's PATH with dirs before it, the last added first
// (as the runner prepends each GITHUB_PATH line).
func prependPath(env []string, dirs []string) string {
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range dirs {
		path = d + string(os.PathListSeparator) + path
	}
	return path
}

// readOutputs parses a GITHUB_OUTPUT file of NAME=VALUE lines.
func readOutputs(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = v
		}
	}
	return out
}

// actionSetup is the action's folder, an unpacked release archive with the
// checkout's action.yml beside it (the plugin installs the archive's
// binary), and a runner's environment with the real helm v3 on PATH.
func actionSetup(t *testing.T, c *testcluster.Cluster) (string, []string) {
	t.Helper()
	actionDir := snapshot(t).unpack(t)
	copyFile(t, filepath.Join(c.Root, "action.yml"), filepath.Join(actionDir, "action.yml"), 0o644)
	helmDir := t.TempDir()
	if err := os.Symlink(c.Helm3, filepath.Join(helmDir, "helm")); err != nil {
		t.Fatal(err)
	}
	return actionDir, withEnv(helmHome(t, c), "PATH="+helmDir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestAction runs the composite GitHub Action (action.yml) with a real helm
// v3 on PATH against the local control plane: it installs the plugin from its
// own folder (here an unpacked release archive with action.yml beside it, so
// the install hook takes the archive's binary instead of compiling the tool
// again; the from-source install is TestHelmPluginFromSource's), writes the Markdown plan to the job summary, passes on no or
// pending changes, and fails on blocked destructive changes and on errors.
func TestAction(t *testing.T) {
	c := testcluster.Get(t)
	actionDir, env := actionSetup(t, c)
	ns := c.Namespace(t)
	c.Helm(t, "install", "demo", chart(t, "demo"), "-n", ns)
	values := filepath.Join(t.TempDir(), "more-replicas.yaml")
	if err := os.WriteFile(values, []byte("web:\n  replicas: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		inputs map[string]string
		// code is the failing step's exit code (0: the action passes) and
		// exitCode the gate's exit-code output.
		code     int
		exitCode string
		summary  []string
	}{{
		name:     "no changes",
		inputs:   map[string]string{"release": "demo", "chart": chart(t, "demo"), "namespace": ns},
		exitCode: "0",
		summary:  []string{"## Upgrade plan for release `demo` in `" + ns + "`", "**Plan: 0 to create"},
	}, {
		name:     "blocked destructive change fails the step",
		inputs:   map[string]string{"release": "demo", "chart": chart(t, "demo-v2"), "namespace": ns},
		code:     2,
		exitCode: "2",
		summary:  []string{"### Destructive changes", "`spec.volumeClaimTemplates[0].spec.resources.requests.storage`"},
	}, {
		name: "acknowledged change passes with changes pending",
		inputs: map[string]string{"release": "demo", "chart": chart(t, "demo-v2"), "namespace": ns,
			"args": "--ack=StatefulSet/" + ns + "/demo-db\n"},
		exitCode: "3",
		summary:  []string{"**Plan: 0 to create, 0 in-place, 1 rolling, 1 recreate-required"},
	}, {
		name: "values files and arguments with spaces",
		inputs: map[string]string{"release": "demo", "chart": chart(t, "demo"), "namespace": ns,
			"values": "\n  " + values + "\n", "args": "--set-string=config.greeting=Hi there reviewers\n"},
		exitCode: "3",
		summary:  []string{"+  GREETING: Hi there reviewers", "+  replicas: 3"},
	}, {
		name:     "error fails the step",
		inputs:   map[string]string{"release": "demo", "chart": filepath.Join(t.TempDir(), "no-such-chart"), "namespace": ns},
		code:     1,
		exitCode: "1",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := runAction(t, actionDir, env, tc.inputs)
			if r.Code != tc.code {
				t.Fatalf("action: step %q exited %d, want %d\n%s", r.Failed, r.Code, tc.code, r.Log)
			}
			if r.Code != 0 && r.Failed != "Plan the upgrade (safe-upgrade gate)" {
				t.Errorf("the failing step is %q, want the gate", r.Failed)
			}
			if got := r.Outputs["exit-code"]; got != tc.exitCode {
				t.Errorf("output exit-code = %q, want %q\n%s", got, tc.exitCode, r.Log)
			}
			if r.Outputs["report"] == "" {
				t.Errorf("output report is empty")
			}
			for _, want := range tc.summary {
				if !strings.Contains(r.Summary, want) {
					t.Errorf("the job summary lacks %q:\n%s", want, r.Summary)
				}
			}
			if tc.code == 2 && !strings.Contains(r.Log, "::error title=safe-upgrade::") {
				t.Errorf("a blocked gate shows no error annotation:\n%s", r.Log)
			}
		})
	}
}

// TestActionShim: with shim: true and no release, the action only puts the
// drop-in helm first on PATH for later steps; a later step's helm upgrade of
// a destructive change is blocked, and other commands reach the real helm.
func TestActionShim(t *testing.T) {
	c := testcluster.Get(t)
	helmDir := t.TempDir()
	if err := os.Symlink(c.Helm3, filepath.Join(helmDir, "helm")); err != nil {
		t.Fatal(err)
	}
	env := withEnv(helmHome(t, c), "PATH="+helmDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	ns := c.Namespace(t)
	c.Helm(t, "install", "demo", chart(t, "demo"), "-n", ns)
	// The action's folder is an unpacked release archive with action.yml, as
	// in TestAction: the plugin installs the archive's binary.
	actionDir := snapshot(t).unpack(t)
	copyFile(t, filepath.Join(c.Root, "action.yml"), filepath.Join(actionDir, "action.yml"), 0o644)

	r := runAction(t, actionDir, env, map[string]string{"shim": "true"})
	if r.Code != 0 || len(r.Path) != 1 {
		t.Fatalf("action with shim: true: step %q exited %d, GITHUB_PATH %q\n%s", r.Failed, r.Code, r.Path, r.Log)
	}
	later := withEnv(env, "PATH="+prependPath(env, r.Path))
	if got := (cmd{Env: later}).run(t, "bash", "-c", "command -v helm"); strings.TrimSpace(got.Stdout) != filepath.Join(r.Path[0], "helm") {
		t.Fatalf("a later step's helm is %q, want the shim in %s", got.Stdout, r.Path[0])
	}
	if got := (cmd{Env: later}).run(t, "bash", "-c", "helm version --short"); got.Code != 0 || !strings.HasPrefix(got.Stdout, "v3.") {
		t.Errorf("helm version through the shim:\n%s", got)
	}
	got := (cmd{Env: later}).run(t, "bash", "-c", `helm upgrade --install demo "$0" -n "$1" --force`, chart(t, "demo-v2"), ns)
	if got.Code != 2 || !strings.Contains(got.Stderr, "demo-db") {
		t.Errorf("a later step's helm upgrade of a destructive change: want exit 2 naming the StatefulSet\n%s", got)
	}

	for _, tc := range []struct {
		name   string
		inputs map[string]string
	}{
		{"no release without the shim", map[string]string{}},
		{"a chart without a release", map[string]string{"shim": "true", "chart": chart(t, "demo")}},
		{"shim: yes", map[string]string{"shim": "yes"}},
	} {
		if r := runAction(t, actionDir, env, tc.inputs); r.Code != 1 || !strings.Contains(r.Log, "::error title=safe-upgrade::") {
			t.Errorf("%s: want exit 1 with an error annotation, got step %q exit %d\n%s", tc.name, r.Failed, r.Code, r.Log)
		}
	}
}
