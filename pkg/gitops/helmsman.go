package gitops

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
)

// Helmsman desired-state files (DSFs), read as Helmsman v3.18 reads them
// (its internal/app state_files.go, release.go, utils.go were checked):
// TOML decoded with BurntSushi/toml, YAML with sigs.k8s.io/yaml, both into
// structures with Helmsman's field names, after the environment variables
// of the job were substituted into the text; several files merged in the
// order `helmsman -f a -f b` merges them.

// HelmsmanOptions are how the job runs Helmsman, read from gitops flags.
type HelmsmanOptions struct {
	// Files, when set, are the DSFs of the one desired state Helmsman is
	// run with (-f each, in order), relative to each checkout's root. When
	// empty, every file of a checkout shaped like a DSF is a desired state
	// of its own.
	Files []string
	// Spec, when set, is Helmsman's --spec file, relative to each
	// checkout: its stateFiles' paths (relative to the checkout's root,
	// where Helmsman runs) follow Files.
	Spec string
	// LookupEnv is the job's environment (os.LookupEnv when nil).
	LookupEnv func(string) (string, bool)
	// NoEnvSubst, SubstEnvValues, NoRecursiveEnvExpand, SkipValidation,
	// KeepUntracked, ReplaceOnRename and ForceUpgrades are Helmsman's
	// --no-env-subst, --subst-env-values, --no-recursive-env-expand,
	// --skip-validation, --keep-untracked-releases, --replace-on-rename and
	// --force-upgrades.
	NoEnvSubst, SubstEnvValues, NoRecursiveEnvExpand, SkipValidation bool
	KeepUntracked, ReplaceOnRename, ForceUpgrades                    bool
	// Repository is the URL of the repository of Helm's repositories.yaml
	// named name (preconfiguredHelmRepos), false when none is.
	Repository func(name string) (string, bool)
}

func (o HelmsmanOptions) lookup(key string) (string, bool) {
	if o.LookupEnv == nil {
		return os.LookupEnv(key)
	}
	return o.LookupEnv(key)
}

// nullBool is Helmsman's NullBool: a bool that knows whether it was set
// (merging several files only overrides a set one).
type nullBool struct {
	Value, HasValue bool
}

func (b *nullBool) UnmarshalJSON(data []byte) error {
	if err := json.Unmarshal(data, &b.Value); err != nil {
		return err
	}
	b.HasValue = true
	return nil
}

func (b *nullBool) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		return nil
	}
	v, err := strconv.ParseBool(string(text))
	if err != nil {
		return err
	}
	b.Value, b.HasValue = v, true
	return nil
}

// hsApp is one app of a DSF, the fields of Helmsman's Release the plan
// reads (the decoders match keys to them as Helmsman's do: by JSON name
// for YAML, by field name, any case, for TOML).
type hsApp struct {
	Name          string                 `json:"name"`
	Namespace     string                 `json:"namespace"`
	Enabled       nullBool               `json:"enabled"`
	Chart         string                 `json:"chart"`
	Version       string                 `json:"version"`
	ValuesFile    string                 `json:"valuesFile,omitempty"`
	ValuesFiles   []string               `json:"valuesFiles,omitempty"`
	SecretsFile   string                 `json:"secretsFile,omitempty"`
	SecretsFiles  []string               `json:"secretsFiles,omitempty"`
	PostRenderer  string                 `json:"postRenderer,omitempty"`
	Protected     nullBool               `json:"protected,omitempty"`
	Priority      int                    `json:"priority,omitempty"`
	Set           map[string]string      `json:"set,omitempty"`
	SetString     map[string]string      `json:"setString,omitempty"`
	SetFile       map[string]string      `json:"setFile,omitempty"`
	HelmFlags     []string               `json:"helmFlags,omitempty"`
	NoHooks       nullBool               `json:"noHooks,omitempty"`
	Hooks         map[string]interface{} `json:"hooks,omitempty"`
	HelmDiffFlags []string               `json:"helmDiffFlags,omitempty"`

	// file is the DSF that defined the app last (merging), dir the
	// directory its paths were resolved in.
	file string
}

type hsNamespace struct {
	Protected bool `json:"protected"`
}

type hsSettings struct {
	GlobalHooks map[string]interface{} `json:"globalHooks,omitempty"`
}

// hsState is a desired state: Helmsman's State, the fields the plan reads.
type hsState struct {
	Settings               hsSettings              `json:"settings,omitempty"`
	Context                string                  `json:"context,omitempty"`
	HelmRepos              map[string]string       `json:"helmRepos,omitempty"`
	PreconfiguredHelmRepos []string                `json:"preconfiguredHelmRepos,omitempty"`
	Namespaces             map[string]*hsNamespace `json:"namespaces"`
	Apps                   map[string]*hsApp       `json:"apps"`
}

// HelmsmanState is one desired state of a checkout: the DSFs Helmsman is
// run with, merged.
type HelmsmanState struct {
	// ID names the state: its files relative to the checkout, joined by
	// " + ", the same on both sides.
	ID    string
	Files []string
	state hsState
	// text is each file's content after substitution, lines its lines
	// before, for locating a change.
	raw map[string][]byte
	// secrets are the values the job's environment put into the files.
	secrets [][]byte
	// missing is set on a side that has none of Files (a DSF the pull
	// request adds).
	missing bool
}

// Helmsman's patterns (utils.go): an environment variable as its
// validation finds one, and a comment, removed before it looks.
var (
	hsEnvVar  = regexp.MustCompile(`\${([a-zA-Z_][a-zA-Z0-9_-]*)}|\$([a-zA-Z_][a-zA-Z0-9_-]*)`)
	hsComment = regexp.MustCompile("#(.*)$")
	hsSSM     = regexp.MustCompile(`{{ssm: ([^~}]+)(~(true))?}}`)
)

// dsfApps finds a top-level apps key: YAML's `apps:`, TOML's [apps],
// [apps.NAME] or apps.NAME.
var dsfApps = regexp.MustCompile(`(?m)^(["']?apps["']?\s*:|\[\s*["']?apps["']?\s*[.\]]|apps\s*\.)`)

// recursionMax bounds Helmsman's recursive expansion of a variable's value
// (a value naming itself would expand forever).
const recursionMax = 64

// substituter substitutes the job's environment into a file's text as
// Helmsman does, and remembers the values it put there.
type substituter struct {
	opts    HelmsmanOptions
	values  [][]byte
	err     error
	envName string
}

// validate is Helmsman's validateEnvVars: every $VAR or ${VAR} of a line,
// the line's comment removed and $$ skipped, must be set; the first that
// is not is an error naming it and the file.
func (s *substituter) validate(text, file string) error {
	if s.opts.SkipValidation || !strings.Contains(text, "$") {
		return nil
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), len(text)+1)
	line := 0
	for sc.Scan() {
		line++
		t := hsComment.ReplaceAllString(strings.ReplaceAll(strings.TrimSpace(sc.Text()), "$$", "!?"), "")
		for _, v := range hsEnvVar.FindAllStringSubmatch(t, -1) {
			key := v[1]
			if key == "" {
				key = v[2]
			}
			if _, ok := s.opts.lookup(key); !ok {
				return fmt.Errorf("%s:%d: %s is used as an environment variable but is unset in the job's environment (Helmsman stops on it too): set it, or escape it as $%s", file, line, v[0], v[0])
			}
		}
	}
	return sc.Err()
}

// substitute is Helmsman's substituteEnv: os.Expand over the text, $$ a
// literal $, each value expanded again while it names a variable (unless
// --no-recursive-env-expand).
func (s *substituter) substitute(text string) string {
	if !strings.Contains(text, "$") {
		return text
	}
	return os.Expand(strings.ReplaceAll(text, "$$", "${HELMSMAN_DOLLAR}"), s.get)
}

func (s *substituter) get(key string) string {
	if key == "HELMSMAN_DOLLAR" {
		return "$"
	}
	value, _ := s.opts.lookup(key)
	if !s.opts.NoRecursiveEnvExpand {
		for i := 0; hsEnvVar.MatchString(value); i++ {
			if i == recursionMax {
				if s.err == nil {
					s.err = fmt.Errorf("environment variable %s: its value still names a variable after %d expansions (it names itself?)", key, recursionMax)
				}
				break
			}
			value = os.Expand(value, func(k string) string {
				if k == "HELMSMAN_DOLLAR" {
					return "$"
				}
				v, _ := s.opts.lookup(k)
				return v
			})
		}
	}
	if value != "" {
		s.values = append(s.values, []byte(value))
	}
	return value
}

// text reads a DSF or values file's text with the environment
// substituted, when subst says Helmsman substitutes it.
func (s *substituter) text(data []byte, file string, subst bool) (string, error) {
	text := string(data)
	if subst {
		if err := s.validate(text, file); err != nil {
			return "", err
		}
		text = s.substitute(text)
		if s.err != nil {
			return "", fmt.Errorf("%s: %w", file, s.err)
		}
	}
	if strings.Contains(text, "{{ssm: ") && hsSSM.MatchString(text) {
		return "", fmt.Errorf("%s: an AWS SSM parameter ({{ssm: …}}) is not read: the plan has no AWS access (run Helmsman with --no-ssm-subst, or pass the value through an environment variable)", file)
	}
	return text, nil
}

// decode decodes a DSF's text as Helmsman does, by its extension.
func decodeDSF(file, text string) (hsState, error) {
	var st hsState
	var err error
	switch strings.ToLower(filepath.Ext(file)) {
	case ".toml", ".tml":
		_, err = toml.Decode(text, &st)
	default:
		err = sigsyaml.Unmarshal([]byte(text), &st)
	}
	if err != nil {
		return st, fmt.Errorf("%s: not a Helmsman desired state file: %w", file, err)
	}
	return st, nil
}

// isDSF reports whether text (of file) has the shape of a Helmsman desired
// state: a top-level apps map, of apps that are maps, one at least naming
// a chart, a version or a namespace.
func isDSF(file, text string) bool {
	if !dsfApps.MatchString(text) {
		return false // no top-level apps: not parsed (a repository's manifests are many)
	}
	var m map[string]interface{}
	switch strings.ToLower(filepath.Ext(file)) {
	case ".toml", ".tml":
		if _, err := toml.Decode(text, &m); err != nil {
			return false
		}
	default:
		if sigsyaml.Unmarshal([]byte(text), &m) != nil {
			return false
		}
	}
	apps, ok := m["apps"].(map[string]interface{})
	if !ok {
		return false
	}
	for _, a := range apps {
		app, ok := a.(map[string]interface{})
		if !ok {
			return false
		}
		for _, k := range []string{"chart", "version", "namespace"} {
			if _, ok := app[k]; ok {
				return true
			}
		}
	}
	return false
}

// dsfExt reports whether file's extension is one Helmsman reads a DSF from.
func dsfExt(file string) bool {
	switch strings.ToLower(filepath.Ext(file)) {
	case ".toml", ".tml", ".yaml", ".yml":
		return true
	}
	return false
}

// LoadHelmsman reads the Helmsman desired states of the checkout root: the
// one of opts.Files, or each file shaped like a DSF (see isDSF). Each file
// is read bounded, inside the checkout; its environment variables
// substituted (an unset one is an error naming it and the file). A side
// that holds none of opts.Files has a state marked missing.
func LoadHelmsman(root string, opts HelmsmanOptions) ([]*HelmsmanState, error) {
	side := &Side{Root: root}
	if fi, err := os.Stat(root); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		side.Root = filepath.Dir(root)
		if len(opts.Files) == 0 {
			opts.Files = []string{filepath.Base(root)}
		}
	}
	if opts.Spec != "" {
		files, found, err := side.specFiles(opts.Spec)
		if err != nil {
			return nil, err
		}
		if !found {
			return []*HelmsmanState{{ID: strings.Join(append(append([]string(nil), opts.Files...), opts.Spec), " + "), missing: true}}, nil
		}
		opts.Files = append(append([]string(nil), opts.Files...), files...)
	}
	if len(opts.Files) > 0 {
		st, err := side.loadState(opts.Files, opts, false)
		if err != nil {
			return nil, err
		}
		return []*HelmsmanState{st}, nil
	}
	files, err := filesUnder(side.Root, "TOML and YAML", dsfExt)
	if err != nil {
		return nil, err
	}
	var out []*HelmsmanState
	var total int64
	for _, f := range files {
		data, err := side.readFile(f, "a Helmsman desired state file", inputfile.ValuesMax, &total)
		if err != nil {
			return nil, err
		}
		// The shape is judged on the text with unset variables empty: an
		// unquoted $VAR must not hide a DSF, nor fail a file that is none.
		lenient := &substituter{opts: HelmsmanOptions{LookupEnv: opts.lookup, NoRecursiveEnvExpand: true}}
		if !isDSF(f, lenient.substitute(string(data))) {
			continue
		}
		rel, _ := filepath.Rel(side.Root, f)
		st, err := side.loadState([]string{filepath.ToSlash(rel)}, opts, true)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// specFiles are the stateFiles of Helmsman's --spec file spec (read as
// its specFromYAML reads it), false when the checkout has no such file.
func (s *Side) specFiles(spec string) ([]string, bool, error) {
	path := filepath.Join(s.Root, filepath.FromSlash(spec))
	if _, err := os.Lstat(path); os.IsNotExist(err) {
		return nil, false, nil
	}
	var total int64
	data, err := s.readFile(path, "a Helmsman spec file", inputfile.SmallMax, &total)
	if err != nil {
		return nil, false, err
	}
	var sp struct {
		StateFiles []struct {
			Path string `json:"path"`
		} `json:"stateFiles"`
	}
	if err := sigsyaml.Unmarshal(data, &sp); err != nil {
		return nil, false, fmt.Errorf("%s: not a Helmsman spec file: %w", path, err)
	}
	var out []string
	for i, f := range sp.StateFiles {
		if f.Path == "" {
			return nil, false, fmt.Errorf("%s: stateFiles[%d].path is empty", path, i)
		}
		out = append(out, filepath.ToSlash(filepath.Clean(f.Path)))
	}
	return out, true, nil
}

// loadState reads and merges files (relative to the side's root) as
// `helmsman -f files[0] -f files[1] …` does (State.build): each decoded
// with its paths resolved in its own directory, then merged into the
// state. found says the files are known to exist; otherwise a side holding
// none of them has a missing state, and one holding some is an error.
func (s *Side) loadState(files []string, opts HelmsmanOptions, found bool) (*HelmsmanState, error) {
	hs := &HelmsmanState{ID: strings.Join(files, " + "), Files: files, raw: map[string][]byte{}}
	present := 0
	for _, f := range files {
		if filepath.IsAbs(f) {
			return nil, fmt.Errorf("%s: a desired state file out of the checkout is not read (name it relative to the checkout)", f)
		}
		if _, err := os.Lstat(filepath.Join(s.Root, filepath.FromSlash(f))); err == nil {
			present++
		}
	}
	if present == 0 && !found {
		hs.missing = true
		return hs, nil
	}
	sub := &substituter{opts: opts}
	st := hsState{}
	for _, rel := range files {
		if !dsfExt(rel) {
			return nil, fmt.Errorf("%s: a Helmsman desired state file is .toml, .tml, .yaml or .yml", rel)
		}
		path := filepath.Join(s.Root, filepath.FromSlash(rel))
		if _, err := s.inside(path); err != nil {
			return nil, err
		}
		data, err := inputfile.Read(path, "a Helmsman desired state file", inputfile.ValuesMax)
		if err != nil {
			return nil, err
		}
		hs.raw[path] = data
		text, err := sub.text(data, path, !opts.NoEnvSubst)
		if err != nil {
			return nil, err
		}
		fileState, err := decodeDSF(path, text)
		if err != nil {
			return nil, err
		}
		if err := mergeState(&st, &fileState, path); err != nil {
			return nil, err
		}
	}
	// setDefaults: an app's release name is its key unless it names one.
	for key, a := range st.Apps {
		if a.Name == "" {
			a.Name = key
		}
	}
	hs.state, hs.secrets = st, sub.values
	return hs, nil
}

// mergeState merges fs, the state of file, into st as State.build does:
// repositories of the earlier files known to it, its apps' paths resolved
// in its directory, an app both define merged field by field (mergo with
// WithOverride and WithAppendSlice: a set field of the later file wins, a
// list is appended to, a map merged key by key; a bool only when set),
// the other apps added, then the rest of the state merged with override.
func mergeState(st, fs *hsState, file string) error {
	for n, r := range st.HelmRepos {
		if fs.HelmRepos == nil {
			fs.HelmRepos = st.HelmRepos
			break
		}
		if _, ok := fs.HelmRepos[n]; !ok {
			fs.HelmRepos[n] = r
		}
	}
	fs.PreconfiguredHelmRepos = append(fs.PreconfiguredHelmRepos, st.PreconfiguredHelmRepos...)
	for key, a := range fs.Apps {
		if a == nil {
			return fmt.Errorf("%s: apps.%s is empty", file, key)
		}
		a.file = file
		resolveAppPaths(a, filepath.Dir(file), fs)
	}
	if st.Apps == nil {
		st.Apps = map[string]*hsApp{}
	}
	for key, a := range fs.Apps {
		if prev, ok := st.Apps[key]; ok {
			mergeApp(prev, a)
			continue
		}
		st.Apps[key] = a
	}
	if fs.Context != "" {
		st.Context = fs.Context
	}
	if st.HelmRepos == nil {
		st.HelmRepos = map[string]string{}
	}
	for n, r := range fs.HelmRepos {
		st.HelmRepos[n] = r
	}
	st.PreconfiguredHelmRepos = append(st.PreconfiguredHelmRepos, fs.PreconfiguredHelmRepos...)
	if st.Namespaces == nil {
		st.Namespaces = map[string]*hsNamespace{}
	}
	for n, ns := range fs.Namespaces {
		if ns == nil {
			ns = &hsNamespace{}
		}
		if prev, ok := st.Namespaces[n]; ok && prev != nil && !ns.Protected {
			continue // mergo: false does not override
		}
		st.Namespaces[n] = ns
	}
	for k, v := range fs.Settings.GlobalHooks {
		if st.Settings.GlobalHooks == nil {
			st.Settings.GlobalHooks = map[string]interface{}{}
		}
		st.Settings.GlobalHooks[k] = v
	}
	return nil
}

// mergeApp merges b, the later file's definition of an app, into a.
func mergeApp(a, b *hsApp) {
	str := func(dst *string, src string) {
		if src != "" {
			*dst = src
		}
	}
	nb := func(dst *nullBool, src nullBool) {
		if src.HasValue {
			*dst = src
		}
	}
	mp := func(dst *map[string]string, src map[string]string) {
		if len(src) == 0 {
			return
		}
		if *dst == nil {
			*dst = map[string]string{}
		}
		for k, v := range src {
			(*dst)[k] = v
		}
	}
	str(&a.Name, b.Name)
	str(&a.Namespace, b.Namespace)
	str(&a.Chart, b.Chart)
	str(&a.Version, b.Version)
	str(&a.ValuesFile, b.ValuesFile)
	str(&a.SecretsFile, b.SecretsFile)
	str(&a.PostRenderer, b.PostRenderer)
	nb(&a.Enabled, b.Enabled)
	nb(&a.Protected, b.Protected)
	nb(&a.NoHooks, b.NoHooks)
	if b.Priority != 0 {
		a.Priority = b.Priority
	}
	a.ValuesFiles = append(a.ValuesFiles, b.ValuesFiles...)
	a.SecretsFiles = append(a.SecretsFiles, b.SecretsFiles...)
	a.HelmFlags = append(a.HelmFlags, b.HelmFlags...)
	a.HelmDiffFlags = append(a.HelmDiffFlags, b.HelmDiffFlags...)
	mp(&a.Set, b.Set)
	mp(&a.SetString, b.SetString)
	mp(&a.SetFile, b.SetFile)
	if len(b.Hooks) > 0 {
		if a.Hooks == nil {
			a.Hooks = map[string]interface{}{}
		}
		for k, v := range b.Hooks {
			a.Hooks[k] = v
		}
	}
	a.file = b.file
}

// resolveAppPaths resolves a's values and secrets files in dir, the
// directory of its DSF, and its chart when it is a local path (no
// repository of the state names its first element, and it is no http(s)
// or oci:// reference), as State.expand does. URLs and cloud buckets are
// kept as written (refused when resolved).
func resolveAppPaths(a *hsApp, dir string, st *hsState) {
	local := func(p string) string {
		if p == "" || strings.Contains(p, "://") || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	a.ValuesFile = local(a.ValuesFile)
	a.SecretsFile = local(a.SecretsFile)
	for i := range a.ValuesFiles {
		a.ValuesFiles[i] = local(a.ValuesFiles[i])
	}
	for i := range a.SecretsFiles {
		a.SecretsFiles[i] = local(a.SecretsFiles[i])
	}
	if a.Chart != "" && !st.chartFromRepo(a.Chart) && !strings.Contains(a.Chart, "://") {
		a.Chart = local(a.Chart)
	}
}

// chartFromRepo is Helmsman's isChartFromRepo: the chart's first element
// names a repository of helmRepos or preconfiguredHelmRepos.
func (st *hsState) chartFromRepo(chart string) bool {
	repo := strings.Split(chart, "/")[0]
	if _, ok := st.HelmRepos[repo]; ok {
		return true
	}
	for _, r := range st.PreconfiguredHelmRepos {
		if r == repo {
			return true
		}
	}
	return false
}
