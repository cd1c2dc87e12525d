package gitops

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
)

// helmfile repositories are rendered by the user's own helmfile, never
// by re-implementing its templating: `helmfile list --output json` names
// the releases of an environment (chart, version, namespace, installed),
// `helmfile template --output-dir` renders
// each as helmfile renders it
// (its values, set, environments, .gotmpl files, sub-helmfiles and bases,
// chartify), one directory a release; `helmfile build` their needs, for
// an environment with a release to plan. A release's render is then planned
// offline as a chart whose templates are that render, text for text.

// HelmfileEnv names the helmfile binary when --helmfile does not.
const HelmfileEnv = "SAFE_UPGRADE_HELMFILE"

// KindHelmfileRelease is the kind a helmfile release is named by in
// reports: NAMESPACE/NAME@ENVIRONMENT.
const KindHelmfileRelease = "HelmfileRelease"

// helmfileOutMax bounds what one helmfile command may print, and the
// manifests of one side's releases together.
const helmfileOutMax = 64 << 20

// HelmfileOptions are how the job runs helmfile.
type HelmfileOptions struct {
	// Binary is --helmfile; else HelmfileEnv; else helmfile on PATH.
	Binary string
	// File is --helmfile-file (helmfile's --file), relative to each
	// checkout; "" lets helmfile find its own (helmfile.yaml,
	// helmfile.yaml.gotmpl, helmfile.d/).
	File string
	// Environments are --helmfile-environment, each planned on its own
	// (default: helmfile's "default").
	Environments []string
	// KubeVersion is passed to helmfile template (the target's version).
	KubeVersion string
}

// HasHelmfile reports whether the checkout root holds a helmfile state
// helmfile would read: opts.File, or one of helmfile's default files.
func HasHelmfile(root string, opts HelmfileOptions) bool {
	names := []string{"helmfile.yaml", "helmfile.yaml.gotmpl", "helmfile.d"}
	if opts.File != "" {
		names = []string{opts.File}
	}
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(n))); err == nil {
			return true
		}
	}
	return false
}

// HelmfileBinary is the helmfile to run: opts.Binary, else HelmfileEnv's,
// else helmfile on PATH, as the real helm is found.
func HelmfileBinary(opts HelmfileOptions) (string, error) {
	if opts.Binary != "" {
		return opts.Binary, nil
	}
	if b := os.Getenv(HelmfileEnv); b != "" {
		return b, nil
	}
	b, err := exec.LookPath("helmfile")
	if err != nil {
		return "", fmt.Errorf("the checkout holds a helmfile state, and no helmfile was found to render it (--helmfile, %s, or helmfile on PATH): the plan never re-implements helmfile's templating", HelmfileEnv)
	}
	return b, nil
}

// HelmfileRelease is a release of one environment as helmfile renders it.
type HelmfileRelease struct {
	Environment, Name, Namespace, Chart, Version string
	Installed                                    bool
	// Manifest is its render, as helmfile template wrote it (file by
	// file, in order of their paths); Rendered is false when helmfile
	// rendered none (not installed).
	Manifest string
	Rendered bool
}

// Key identifies a release across the two sides.
func (r *HelmfileRelease) Key() string { return r.Environment + "/" + r.Namespace + "/" + r.Name }

// Ref names the release in reports.
func (r *HelmfileRelease) Ref() ObjectRef {
	return ObjectRef{APIVersion: "helmfile", Kind: KindHelmfileRelease, Namespace: r.Namespace, Name: r.Name + "@" + r.Environment}
}

// helmfileList is an entry of `helmfile list --output json`.
type helmfileList struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Enabled   bool   `json:"enabled"`
	Installed bool   `json:"installed"`
	Chart     string `json:"chart"`
	Version   string `json:"version"`
}

// RenderHelmfile runs helmfile in the checkout root for each environment:
// list, then template into scratch (a directory of its own per run). A
// failure is an error naming the command, the environment and the end of
// what helmfile printed on stderr.
func RenderHelmfile(ctx context.Context, bin, root, scratch string, opts HelmfileOptions) (map[string]*HelmfileRelease, error) {
	envs := opts.Environments
	if len(envs) == 0 {
		envs = []string{"default"}
	}
	out := map[string]*HelmfileRelease{}
	var total int64
	for i, env := range envs {
		global := []string{"--environment", env}
		if opts.File != "" {
			global = append([]string{"--file", opts.File}, global...)
		}
		listed, err := runHelmfile(ctx, bin, root, append(global, "list", "--output", "json", "--skip-charts"))
		if err != nil {
			return nil, err
		}
		var rels []helmfileList
		if err := json.Unmarshal(bytes.TrimSpace(listed), &rels); err != nil && len(bytes.TrimSpace(listed)) > 0 {
			return nil, fmt.Errorf("helmfile list --output json (environment %s) printed no JSON list: %w", env, err)
		}
		dir := filepath.Join(scratch, fmt.Sprint(i))
		args := append(global, "template", "--output-dir", dir, "--output-dir-template", "{{ .OutputDir }}/{{ .Release.Namespace }}_/{{ .Release.Name }}")
		if opts.KubeVersion != "" {
			args = append(args, "--kube-version", opts.KubeVersion)
		}
		if _, err := runHelmfile(ctx, bin, root, args); err != nil {
			return nil, err
		}
		for _, l := range rels {
			if !l.Enabled {
				continue // its condition leaves it out: helmfile does nothing with it
			}
			if msgs := releaseName(l.Name); len(msgs) > 0 {
				return nil, fmt.Errorf("helmfile environment %s: release %q: not a valid release name: %s", env, l.Name, strings.Join(msgs, "; "))
			}
			r := &HelmfileRelease{Environment: env, Name: l.Name, Namespace: l.Namespace, Chart: l.Chart, Version: l.Version, Installed: l.Installed}
			rdir := filepath.Join(dir, l.Namespace+"_", l.Name)
			if manifest, found, err := readRender(rdir, &total); err != nil {
				return nil, fmt.Errorf("helmfile environment %s: release %s: %w", env, l.Name, err)
			} else if found {
				r.Manifest, r.Rendered = manifest, true
			} else if l.Installed {
				return nil, fmt.Errorf("helmfile environment %s: release %s is installed but helmfile template rendered nothing for it in %s", env, l.Name, rdir)
			}
			if r.Namespace == "" {
				r.Namespace = "default" // helm's, from no kubeconfig context
			}
			if prev, dup := out[r.Key()]; dup {
				return nil, fmt.Errorf("helmfile environment %s: release %s/%s is defined twice (charts %s and %s)", env, r.Namespace, r.Name, prev.Chart, r.Chart)
			}
			out[r.Key()] = r
		}
	}
	return out, nil
}

// HelmfileNeeds are the needs of each release of environment env (by
// NAMESPACE/NAME), as `helmfile build` prints them (a YAML document a
// state): run only for an environment with a release to plan, as build
// runs the prepare hooks again.
func HelmfileNeeds(ctx context.Context, bin, root, env string, opts HelmfileOptions) (map[string][]string, error) {
	global := []string{"--environment", env}
	if opts.File != "" {
		global = append([]string{"--file", opts.File}, global...)
	}
	built, err := runHelmfile(ctx, bin, root, append(global, "build"))
	if err != nil {
		return nil, err
	}
	needs, err := helmfileNeeds(built)
	if err != nil {
		return nil, fmt.Errorf("helmfile build (environment %s): %w", env, err)
	}
	return needs, nil
}

// helmfileNeeds reads the needs of each release from built.
func helmfileNeeds(built []byte) (map[string][]string, error) {
	out := map[string][]string{}
	dec := yaml.NewDecoder(bytes.NewReader(built))
	for {
		var st struct {
			Releases []struct {
				Name      string   `yaml:"name"`
				Namespace string   `yaml:"namespace"`
				Needs     []string `yaml:"needs"`
			} `yaml:"releases"`
		}
		err := dec.Decode(&st)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		for _, r := range st.Releases {
			if len(r.Needs) > 0 {
				out[r.Namespace+"/"+r.Name] = r.Needs
			}
		}
	}
}

// runHelmfile runs bin args in dir with the job's environment, its output
// bounded.
func runHelmfile(ctx context.Context, bin, dir string, args []string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	stdout := &boundedBuffer{max: helmfileOutMax}
	stderr := &boundedBuffer{max: 64 << 10, keepTail: true}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	if stdout.over {
		return nil, fmt.Errorf("helmfile %s: printed more than %s", strings.Join(args, " "), inputfile.Size(helmfileOutMax))
	}
	if err != nil {
		tail := strings.TrimSpace(stderr.String())
		if lines := strings.Split(tail, "\n"); len(lines) > 20 {
			tail = strings.Join(lines[len(lines)-20:], "\n")
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("%w (--timeout)", ctx.Err())
		}
		return nil, fmt.Errorf("helmfile %s (in %s): %w\n%s", strings.Join(args, " "), dir, err, tail)
	}
	return stdout.Bytes(), nil
}

// boundedBuffer keeps at most max bytes: the first ones, or the last.
type boundedBuffer struct {
	bytes.Buffer
	max      int
	keepTail bool
	over     bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if b.Len()+len(p) > b.max {
		b.over = true
		if !b.keepTail {
			return n, nil
		}
		b.Buffer.Write(p)
		rest := append([]byte(nil), b.Bytes()[b.Len()-b.max:]...)
		b.Reset()
		b.Buffer.Write(rest)
		return n, nil
	}
	return b.Buffer.Write(p)
}

// readRender concatenates the files helm template wrote under dir, in
// order of their paths; false when dir does not exist.
func readRender(dir string, total *int64) (string, bool, error) {
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return "", false, nil
	}
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			if len(files) == FilesMax {
				return fmt.Errorf("more than %d files rendered", FilesMax)
			}
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return "", false, err
	}
	sort.Strings(files)
	var b strings.Builder
	for _, f := range files {
		data, err := inputfile.Read(f, "a render of helmfile template", inputfile.ManifestMax)
		if err != nil {
			return "", false, err
		}
		if *total += int64(len(data)); *total > helmfileOutMax*4 {
			return "", false, fmt.Errorf("the renders hold more than %s together", inputfile.Size(helmfileOutMax*4))
		}
		text := strings.TrimPrefix(string(data), "---\n")
		b.WriteString("---\n")
		b.WriteString(text)
		if !strings.HasSuffix(text, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String(), true, nil
}

// semverRe is a strict SemVer 2 version.
var semverRe = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// chartNameRe is what a chart's name may be (Helm's).
var chartNameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Release is r as a release the offline plan renders: a chart written
// into dir whose one template is r's render, its text kept as it is
// ({{ escaped), so that Helm renders exactly what helmfile template
// printed (hooks keep their annotations, and so stay hooks).
func (r *HelmfileRelease) Release(dir, file string, line int) (*Release, error) {
	name := strings.TrimSuffix(path.Base(r.Chart), ".tgz")
	if !chartNameRe.MatchString(name) {
		name = "helmfile-release"
	}
	version := "0.0.0" // a constraint, or none: the render names the real one
	if v := strings.TrimPrefix(r.Version, "v"); semverRe.MatchString(v) {
		version = v
	}
	chartYAML := fmt.Sprintf("apiVersion: v2\nname: %s\nversion: %s\ndescription: the render of helmfile template for release %s (environment %s)\n", name, version, r.Name, r.Environment)
	tmpl := strings.ReplaceAll(r.Manifest, "{{", `{{"{{"}}`)
	if err := os.MkdirAll(filepath.Join(dir, name, "templates"), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, name, "Chart.yaml"), []byte(chartYAML), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, name, "templates", "helmfile-render.yaml"), []byte(tmpl), 0o600); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(r.Manifest))
	rel := &Release{Object: r.Ref(), File: file, Line: line, Name: r.Name, Namespace: r.Namespace, StorageNamespace: r.Namespace,
		Chart:  Chart{Path: filepath.Join(dir, name), Dir: r.Chart, Digest: fmt.Sprintf("%x", sum), Version: r.Version},
		Values: map[string]interface{}{}, chartField: "releases[" + r.Name + "].chart", chartLine: line}
	return rel, nil
}

// HelmfileLine is the line of file (a helmfile state) that names release
// name (`name: NAME`), 1 when none does.
func HelmfileLine(file, name string) int {
	data, err := inputfile.Read(file, "a helmfile state", inputfile.ValuesMax)
	if err != nil {
		return 1
	}
	re := regexp.MustCompile(`^\s*(-\s*)?name:\s*["']?` + regexp.QuoteMeta(name) + `["']?\s*(#.*)?$`)
	for i, l := range strings.Split(string(data), "\n") {
		if re.MatchString(l) {
			return i + 1
		}
	}
	return 1
}
