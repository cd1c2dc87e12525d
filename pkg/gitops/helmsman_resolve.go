package gitops

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/strvals"
	"k8s.io/apimachinery/pkg/util/validation"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
)

// KindHelmsmanApp is the kind a Helmsman app is named by in reports: its
// namespace and its key under apps.
const KindHelmsmanApp = "HelmsmanApp"

// hsResolved is an enabled app of a desired state resolved to the release
// Helmsman's `helm upgrade --install` renders, and what Helmsman does
// beside it.
type hsResolved struct {
	key     string
	app     *hsApp
	release *Release
	// refused is why the app cannot be planned (a postRenderer, secrets
	// files, a helmFlag that changes the render): an error only when the
	// app is to be planned.
	refused error
	// extra are what else tells two sides apart that the release does
	// not hold (the secrets files' digests, the post-renderer).
	extra          string
	noHooks, force bool
	protected      bool
}

// hsSide is one side's checkout for resolving: its root, for paths.
type hsSide struct {
	side *Side
	opts HelmsmanOptions
	st   *HelmsmanState
	sub  *substituter
}

// appError is an error about app key of the state, naming its file and
// the field.
func appError(a *hsApp, key, field, format string, args ...interface{}) error {
	return &NamedError{fmt.Errorf("Helmsman app %s (%s): apps.%s.%s: %s", key, a.file, key, field, fmt.Sprintf(format, args...))}
}

// resolveApps resolves every enabled app of the side's state.
func (h *hsSide) resolveApps() (map[string]*hsResolved, error) {
	out := map[string]*hsResolved{}
	keys := make([]string, 0, len(h.st.state.Apps))
	for k := range h.st.state.Apps {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		a := h.st.state.Apps[key]
		r, err := h.resolveApp(key, a)
		if err != nil {
			return nil, err
		}
		out[key] = r
	}
	return out, nil
}

// resolveApp resolves app key as Helmsman's getHelmArgsFor("upgrade")
// builds its helm command: the chart (a repository of helmRepos or
// preconfiguredHelmRepos, an oci:// reference, or a local directory), the
// version ("latest": the newest), -f for the values files in order,
// --set, --set-string and --set-file (each map in key order; Helm applies
// every --set before any --set-string, and those before --set-file).
func (h *hsSide) resolveApp(key string, a *hsApp) (*hsResolved, error) {
	ns, defined := h.st.state.Namespaces[a.Namespace]
	res := &hsResolved{key: key, app: a, noHooks: a.NoHooks.Value, protected: a.Protected.Value || ns != nil && ns.Protected}
	if !a.Enabled.Value {
		return res, nil
	}
	if a.Namespace == "" {
		return nil, appError(a, key, "namespace", "required (Helmsman refuses an app without one)")
	}
	if msgs := validation.IsDNS1123Label(a.Namespace); len(msgs) > 0 {
		return nil, appError(a, key, "namespace", "%q is not a valid namespace: %s", a.Namespace, strings.Join(msgs, "; "))
	}
	if msgs := releaseName(a.Name); len(msgs) > 0 {
		return nil, appError(a, key, "name", "%q is not a valid release name: %s", a.Name, strings.Join(msgs, "; "))
	}
	if a.Chart == "" {
		return nil, appError(a, key, "chart", "required")
	}
	if a.Version == "" {
		return nil, appError(a, key, "version", "required (Helmsman refuses an app without one)")
	}
	if a.ValuesFile != "" && len(a.ValuesFiles) > 0 {
		return nil, appError(a, key, "valuesFiles", "valuesFile and valuesFiles are both set; Helmsman refuses them together")
	}
	if !defined && a.Namespace != "kube-system" && !h.opts.SkipValidation {
		return nil, appError(a, key, "namespace", "%q is not among the DSF's namespaces: Helmsman refuses to install it there until it is", a.Namespace)
	}
	r := &Release{Object: ObjectRef{APIVersion: "helmsman", Kind: KindHelmsmanApp, Namespace: a.Namespace, Name: key},
		File: a.file, Name: a.Name, Namespace: a.Namespace, StorageNamespace: a.Namespace, chartField: "apps." + key + ".chart"}
	r.Line = appLine(a.file, h.st.raw[a.file], key)
	r.chartLine = r.Line
	var err error
	if r.Chart, err = h.chart(key, a); err != nil {
		return nil, err
	}
	if r.Values, err = h.values(key, a); err != nil {
		return nil, err
	}
	var extra []string
	if a.PostRenderer != "" {
		res.refused = appError(a, key, "postRenderer", "%q is an executable the pull request names: the plan never runs one (plan the app without it, or with its output committed as the chart)", a.PostRenderer)
		extra = append(extra, "postRenderer="+a.PostRenderer)
	}
	secrets := append([]string{a.SecretsFile}, a.SecretsFiles...)
	for _, f := range secrets {
		if f == "" {
			continue
		}
		if res.refused == nil {
			res.refused = appError(a, key, "secretsFile", "%s is encrypted (helm-secrets, vault or eyaml): its values cannot be read without its key, which the plan does not have", h.side.relName(f))
		}
		extra = append(extra, "secretsFile="+h.side.relName(f)+"@"+h.digest(f))
	}
	if err := h.helmFlags(res, r); err != nil {
		return nil, err
	}
	hooks := len(a.Hooks) > 0 || len(h.st.state.Settings.GlobalHooks) > 0
	if hooks {
		r.Notes = append(r.Notes, "Helmsman's lifecycle hooks of the app (hooks, settings.globalHooks: manifests it applies or commands it runs around the helm command) are not planned")
	}
	res.release, res.extra = r, strings.Join(extra, "\n")
	return res, nil
}

// digest is a file's digest, "" when it cannot be read (its change is
// then unknown, and refused anyway).
func (h *hsSide) digest(f string) string {
	if _, err := h.side.inside(f); err != nil {
		return ""
	}
	data, err := inputfile.Read(f, "a secrets file", inputfile.ValuesMax)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%x", sha256.Sum256(data))
}

// helmFlags reads an app's helmFlags, which Helmsman passes to helm
// upgrade: --force and --no-hooks as Helm applies them, --skip-crds, and
// flags that change nothing the plan shows (waiting, timeouts, history);
// any other is refused by name, as the plan could not render what Helm
// would.
func (h *hsSide) helmFlags(res *hsResolved, r *Release) error {
	a := res.app
	flags := a.HelmFlags
	for i := 0; i < len(flags); i++ {
		f := flags[i]
		name, _, hasValue := strings.Cut(f, "=")
		switch name {
		case "--force":
			res.force = true
		case "--no-hooks":
			res.noHooks = true
		case "--skip-crds":
			r.InstallCRDs = crdPolicySkip
		case "--wait", "--wait-for-jobs", "--atomic", "--cleanup-on-fail", "--create-namespace", "--debug", "--rollback-on-failure":
		case "--timeout", "--description", "--history-max":
			if !hasValue {
				i++ // its value is the next item
			}
		default:
			if res.refused == nil {
				res.refused = appError(a, res.key, "helmFlags", "%q changes what Helm renders or applies in a way the plan does not read", f)
			}
		}
	}
	if res.force {
		r.Notes = append(r.Notes, "helm upgrade --force (helmFlags): Helm replaces every changed object with PUT instead of patching it")
	}
	return nil
}

// chart is where app key's chart comes from.
func (h *hsSide) chart(key string, a *hsApp) (Chart, error) {
	version := a.Version
	if version == "latest" {
		version = "" // Helmsman passes no --version: the newest
	}
	ref := a.Chart
	st := &h.st.state
	if st.chartFromRepo(ref) {
		repo, name, _ := strings.Cut(ref, "/")
		if name == "" {
			return Chart{}, appError(a, key, "chart", "%q: want REPO/CHART", ref)
		}
		raw, ok := st.HelmRepos[repo]
		if !ok {
			// preconfiguredHelmRepos: added by `helm repo add` beforehand.
			if h.opts.Repository == nil {
				return Chart{}, appError(a, key, "chart", "repository %q is preconfigured (preconfiguredHelmRepos) but not in Helm's repositories.yaml: helm repo add it in the job", repo)
			}
			if raw, ok = h.opts.Repository(repo); !ok {
				return Chart{}, appError(a, key, "chart", "repository %q is preconfigured (preconfiguredHelmRepos) but not in Helm's repositories.yaml: helm repo add it in the job", repo)
			}
		}
		u, err := url.Parse(raw)
		if err != nil {
			return Chart{}, appError(a, key, "chart", "repository %q: its URL does not parse", repo)
		}
		if u.User != nil {
			// Helmsman passes them to helm repo add; the plan takes an
			// HTTP repository's credentials from Helm's repositories.yaml
			// (helm repo add in the job), and never shows them.
			if p, ok := u.User.Password(); ok && p != "" {
				h.st.secrets = append(h.st.secrets, []byte(p))
			}
			u.User = nil
		}
		switch u.Scheme {
		case "https", "http":
			return Chart{RepoURL: u.String(), Name: name, Version: version, Via: "helmRepos." + repo}, nil
		case "oci":
			return Chart{Name: strings.TrimSuffix(u.String(), "/") + "/" + name, Version: version, Via: "helmRepos." + repo}, nil
		}
		return Chart{}, appError(a, key, "chart", "repository %q: a %s:// repository (a Helm plugin's) is not read", repo, u.Scheme)
	}
	switch {
	case strings.HasPrefix(ref, "oci://"):
		return Chart{Name: ref, Version: version}, nil
	case strings.Contains(ref, "://"):
		return Chart{}, appError(a, key, "chart", "%q: a chart by URL is not read (name it REPO/CHART with the repository in helmRepos)", ref)
	}
	// A local chart directory, relative to the DSF.
	if _, err := h.side.inside(filepath.Join(ref, "Chart.yaml")); os.IsNotExist(err) {
		return Chart{}, appError(a, key, "chart", "%s is no repository of helmRepos or preconfiguredHelmRepos, and not a chart directory (no Chart.yaml)", h.side.relName(ref))
	} else if err != nil {
		return Chart{}, appError(a, key, "chart", "%v", err)
	}
	digest, err := h.side.dirDigest(ref)
	if err != nil {
		return Chart{}, appError(a, key, "chart", "%v", err)
	}
	rel, _ := filepath.Rel(h.side.Root, ref)
	return Chart{Path: ref, Dir: filepath.ToSlash(rel), Digest: digest, Version: version}, nil
}

// values merges app key's values as helm merges Helmsman's flags
// (values.Options.MergeValues): the values files in order, each merged
// key by key over the ones before; then each set (commas escaped, as
// Helmsman escapes them), setString, setFile. A values file is
// substituted with the job's environment with --subst-env-values. A file
// by URL or in a cloud bucket is refused by name.
func (h *hsSide) values(key string, a *hsApp) (map[string]interface{}, error) {
	files := a.ValuesFiles
	if a.ValuesFile != "" {
		files = []string{a.ValuesFile}
	}
	out := map[string]interface{}{}
	for i, f := range files {
		field := "valuesFile"
		if a.ValuesFile == "" {
			field = fmt.Sprintf("valuesFiles[%d]", i)
		}
		data, err := h.readFile(a, key, field, f)
		if err != nil {
			return nil, err
		}
		text, err := h.sub.text(data, h.side.relName(f), h.opts.SubstEnvValues && !h.opts.NoEnvSubst)
		if err != nil {
			return nil, &NamedError{fmt.Errorf("Helmsman app %s (%s): apps.%s.%s: %w", key, a.file, key, field, err)}
		}
		var m map[string]interface{}
		if err := sigsyaml.Unmarshal([]byte(text), &m); err != nil {
			return nil, appError(a, key, field, "%s: not a YAML map: %v", h.side.relName(f), err)
		}
		out = mergeMaps(out, m)
	}
	escape := func(v string) string { return strings.ReplaceAll(v, ",", `\,`) }
	for _, k := range slices.Sorted(maps.Keys(a.Set)) {
		if err := strvals.ParseInto(k+"="+escape(a.Set[k]), out); err != nil {
			return nil, appError(a, key, "set."+k, "%v", err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(a.SetString)) {
		if err := strvals.ParseIntoString(k+"="+escape(a.SetString[k]), out); err != nil {
			return nil, appError(a, key, "setString."+k, "%v", err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(a.SetFile)) {
		// helm reads the file relative to where Helmsman runs: the
		// checkout's root.
		reader := func(rs []rune) (interface{}, error) {
			p := string(rs)
			if !filepath.IsAbs(p) {
				p = filepath.Join(h.side.Root, p)
			}
			data, err := h.readFile(a, key, "setFile."+k, p)
			return string(data), err
		}
		if err := strvals.ParseIntoFile(k+"="+escape(a.SetFile[k]), out, reader); err != nil {
			return nil, appError(a, key, "setFile."+k, "%v", err)
		}
	}
	return out, nil
}

// readFile reads a file an app names, bounded and inside the checkout; a
// URL or a cloud bucket is refused by name.
func (h *hsSide) readFile(a *hsApp, key, field, f string) ([]byte, error) {
	if strings.Contains(f, "://") {
		return nil, appError(a, key, field, "%q: a file by URL or in a cloud bucket is not read (commit it beside the DSF)", f)
	}
	if _, err := h.side.inside(f); os.IsNotExist(err) {
		return nil, appError(a, key, field, "%s does not exist", h.side.relName(f))
	} else if err != nil {
		return nil, appError(a, key, field, "%v", err)
	}
	data, err := inputfile.Read(f, "a values file", inputfile.ValuesMax)
	if err != nil {
		return nil, appError(a, key, field, "%v", err)
	}
	return data, nil
}
