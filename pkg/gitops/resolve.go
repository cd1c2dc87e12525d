package gitops

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/strvals"
	"k8s.io/apimachinery/pkg/util/validation"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
)

// The objects read, by kind and API group.
const (
	KindHelmRelease    = "HelmRelease"
	KindApplication    = "Application"
	fluxHelmGroup      = "helm.toolkit.fluxcd.io/"
	fluxSourceGroup    = "source.toolkit.fluxcd.io/"
	argoGroup          = "argoproj.io/"
	releaseNameMax     = 53 // Helm's limit, and helm-controller's
	releaseHashLength  = 12
	defaultValuesKey   = "values.yaml"
	crdPolicySkip      = "Skip"
	argoValuesFileNote = "Argo CD renders with helm template (an install); the plan renders the head as an upgrade of the base"
)

// Chart is where a release's chart comes from: a local directory (Path),
// a chart of an HTTP(S) repository (RepoURL, Name), or an OCI reference
// (Name is oci://…). Version is the version or constraint, "" for the
// newest.
type Chart struct {
	// Path is the directory; Dir is it relative to the side's root and
	// Digest its files' digest, which tell two sides' charts apart.
	Path    string `json:"-"`
	Dir     string `json:"dir,omitempty"`
	Digest  string `json:"digest,omitempty"`
	RepoURL string `json:"repoURL,omitempty"`
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
	// Tag is an OCI tag taken as written (an OCIRepository's ref.tag, not
	// a version constraint): Fetch resolves it to its digest.
	Tag       string `json:"tag,omitempty"`
	PlainHTTP bool   `json:"plainHTTP,omitempty"`
	// Via names the object the chart is found through (a HelmRepository),
	// for errors.
	Via string `json:"-"`
}

// String names the chart as a user would: REF@VERSION (from REPO).
func (c Chart) String() string {
	s := c.Name
	if c.Dir != "" {
		s = c.Dir
	}
	if c.Version != "" {
		s += "@" + c.Version
	}
	if c.Tag != "" {
		s += ":" + c.Tag
	}
	if c.RepoURL != "" {
		s += " from " + c.RepoURL
	}
	return s
}

// Release is one side of a HelmRelease or an Application resolved to what
// its controller renders: Helm's release name and namespace, the chart,
// the values as the controller merges them, and helm-controller's
// post-renderers.
type Release struct {
	Object ObjectRef `json:"-"`
	File   string    `json:"-"`
	Line   int       `json:"-"`
	Name   string    `json:"name"`
	// Namespace is the release namespace; StorageNamespace where Helm's
	// release records are (helm-controller's storageNamespace; the release
	// namespace for Argo CD, which stores none).
	Namespace        string                 `json:"namespace"`
	StorageNamespace string                 `json:"storageNamespace"`
	Chart            Chart                  `json:"chart"`
	Values           map[string]interface{} `json:"values"`
	// ValuesFiles are source-controller's valuesFiles of the chart, which
	// replace the chart's values.yaml (nil: none).
	ValuesFiles *ValuesFiles `json:"valuesFiles,omitempty"`
	// PostRenderers are helm-controller's, in order: the HelmRelease's
	// kustomize post-renderers, then its origin labels. None for Argo CD.
	PostRenderers []PostRenderer `json:"postRenderers,omitempty"`
	// InstallCRDs and UpgradeCRDs are helm-controller's CRD policies
	// (Skip, Create, CreateReplace), "" for the default; SkipCRDs is Argo
	// CD's skipCrds.
	InstallCRDs string `json:"installCRDs,omitempty"`
	UpgradeCRDs string `json:"upgradeCRDs,omitempty"`
	SkipCRDs    bool   `json:"skipCRDs,omitempty"`
	// Sources are the other documents the values came from (valuesFrom).
	Sources []*Doc `json:"-"`
	// Notes say what the plan could not take from the files as the
	// controller would (an optional valuesFrom that is missing).
	Notes []string `json:"-"`
	// chartField is the field the chart comes from, at chartLine.
	chartField string
	chartLine  int
}

// ChartError is err, about r's chart (it cannot be fetched), naming the
// object, its file and the field of the chart.
func (r *Release) ChartError(err error) error {
	return &NamedError{fmt.Errorf("%s (%s:%d): %s: %w", r.Object, r.File, r.chartLine, r.chartField, err)}
}

// NamedError is an error that names its object, file and field already.
type NamedError struct{ Err error }

func (e *NamedError) Error() string { return e.Err.Error() }

func (e *NamedError) Unwrap() error { return e.Err }

// setChartField records where r's chart is named in d.
func (r *Release) setChartField(d *Doc, field string) {
	r.chartField, r.chartLine = field, lineOf(d.Node, strings.Split(field, ".")...)
}

// Same reports whether a and b render the same: same chart, values,
// release name, namespace and post-renderers.
func Same(a, b *Release) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// SkipsCRDs reports whether the controller leaves the chart's crds/
// directory alone: helm-controller's upgrade.crds (install.crds when
// install) is Skip (the default on upgrade) and Argo CD's skipCrds.
func (r *Release) SkipsCRDs(install bool) bool {
	if r.Object.Kind == KindApplication {
		return r.SkipCRDs
	}
	if install {
		return r.InstallCRDs == crdPolicySkip
	}
	return r.UpgradeCRDs == "" || r.UpgradeCRDs == crdPolicySkip
}

// fieldError is an error in the object d at field: it names the object,
// its file and line, and the field, as every resolution error does.
func fieldError(d *Doc, field string, format string, args ...interface{}) error {
	return fmt.Errorf("%s (%s:%d): %s: %s", d.Ref, d.File, lineOf(d.Node, strings.Split(field, ".")...), field, fmt.Sprintf(format, args...))
}

// IsRelease reports whether d is a HelmRelease or an Argo CD Application
// (whether its source is Helm's is Resolve's to say).
func IsRelease(d *Doc) bool {
	switch {
	case d.Ref.Kind == KindHelmRelease && strings.HasPrefix(d.Ref.APIVersion, fluxHelmGroup):
		return true
	case d.Ref.Kind == KindApplication && strings.HasPrefix(d.Ref.APIVersion, argoGroup):
		return true
	}
	return false
}

// Resolve turns d, a HelmRelease or an Application of side s, into what
// its controller renders. An Application whose source is no Helm chart
// (plain manifests, kustomize) is nil, nil.
func (s *Side) Resolve(d *Doc) (*Release, error) {
	spec, ok := d.Object["spec"].(map[string]interface{})
	if !ok {
		return nil, fieldError(d, "spec", "missing or not a map")
	}
	var r *Release
	var err error
	if d.Ref.Kind == KindApplication {
		r, err = s.resolveApplication(d, spec)
	} else {
		r, err = s.resolveHelmRelease(d, spec)
	}
	if r != nil && d.BuiltBy != "" {
		r.Notes = append(r.Notes, fmt.Sprintf("read as %s builds it: its targetNamespace and postBuild substitution applied", d.BuiltBy))
	}
	if r != nil {
		// A change of a postBuild variable's source changes the render.
		r.Sources = append(r.Sources, d.Vars...)
	}
	return r, err
}

// value is the value at key of m as a T (the zero T when absent); a value
// of another type is an error naming the field and want.
func value[T any](d *Doc, m map[string]interface{}, field, key, want string) (T, error) {
	var zero T
	v, ok := m[key]
	if !ok || v == nil {
		return zero, nil
	}
	t, ok := v.(T)
	if !ok {
		return zero, fieldError(d, strings.TrimPrefix(field+"."+key, "."), "want %s, got %T", want, v)
	}
	return t, nil
}

// str is the string at key of m, "" when absent.
func str(d *Doc, m map[string]interface{}, field, key string) (string, error) {
	return value[string](d, m, field, key, "a string")
}

// obj is the map at key of m, nil when absent.
func obj(d *Doc, m map[string]interface{}, field, key string) (map[string]interface{}, error) {
	return value[map[string]interface{}](d, m, field, key, "a map")
}

// list is the list at key of m, nil when absent.
func list(d *Doc, m map[string]interface{}, field, key string) ([]interface{}, error) {
	return value[[]interface{}](d, m, field, key, "a list")
}

// boolean is the bool at key of m, false when absent.
func boolean(d *Doc, m map[string]interface{}, field, key string) (bool, error) {
	return value[bool](d, m, field, key, "true or false")
}

// resolveHelmRelease is helm-controller's view of a HelmRelease.
func (s *Side) resolveHelmRelease(d *Doc, spec map[string]interface{}) (*Release, error) {
	r := &Release{Object: d.Ref, File: d.File, Line: d.Line, Namespace: d.Ref.Namespace, StorageNamespace: d.Ref.Namespace}
	var err error
	if err = s.helmReleaseChart(d, spec, r); err != nil {
		return nil, err
	}
	target, err := str(d, spec, "spec", "targetNamespace")
	if err != nil {
		return nil, err
	}
	if err := checkName(d, "spec.targetNamespace", target, validation.IsDNS1123Label); err != nil {
		return nil, err
	}
	if target != "" {
		r.Namespace = target
	}
	if storage, err := str(d, spec, "spec", "storageNamespace"); err != nil {
		return nil, err
	} else if err := checkName(d, "spec.storageNamespace", storage, validation.IsDNS1123Label); err != nil {
		return nil, err
	} else if storage != "" {
		r.StorageNamespace = storage
	}
	if r.Name, err = str(d, spec, "spec", "releaseName"); err != nil {
		return nil, err
	}
	if err := checkName(d, "spec.releaseName", r.Name, releaseName); err != nil {
		return nil, err
	}
	if r.Name == "" {
		r.Name = DefaultReleaseName(target, d.Ref.Name)
	}
	for _, action := range []struct {
		key    string
		policy *string
	}{{"install", &r.InstallCRDs}, {"upgrade", &r.UpgradeCRDs}} {
		a, err := obj(d, spec, "spec", action.key)
		if err != nil {
			return nil, err
		}
		if *action.policy, err = str(d, a, "spec."+action.key, "crds"); err != nil {
			return nil, err
		}
	}
	if r.Values, err = s.helmReleaseValues(d, spec, r); err != nil {
		return nil, err
	}
	if r.PostRenderers, err = postRenderers(d, spec); err != nil {
		return nil, err
	}
	return r, nil
}

// DefaultReleaseName is the release name helm-controller gives a
// HelmRelease without spec.releaseName: [targetNamespace-]name, and when
// that is longer than Helm's 53 characters, its first 40 characters, "-"
// and the first 12 hexadecimal digits of its SHA-256 (helm-controller's
// release.ShortenName).
func DefaultReleaseName(targetNamespace, name string) string {
	if targetNamespace != "" {
		name = targetNamespace + "-" + name
	}
	if len(name) <= releaseNameMax {
		return name
	}
	sum := fmt.Sprintf("%x", sha256.Sum256([]byte(name)))
	return name[:releaseNameMax-releaseHashLength-1] + "-" + sum[:releaseHashLength]
}

// helmReleaseChart resolves spec.chart.spec (a chart of a HelmRepository
// or a path in a GitRepository) or spec.chartRef (an OCIRepository).
func (s *Side) helmReleaseChart(d *Doc, spec map[string]interface{}, r *Release) error {
	tmpl, err := obj(d, spec, "spec", "chart")
	if err != nil {
		return err
	}
	ref, err := obj(d, spec, "spec", "chartRef")
	if err != nil {
		return err
	}
	switch {
	case tmpl != nil && ref != nil:
		return fieldError(d, "spec.chartRef", "spec.chart and spec.chartRef are both set; helm-controller accepts one")
	case ref != nil:
		r.setChartField(d, "spec.chartRef")
		return s.chartRef(d, ref, r)
	case tmpl == nil:
		return fieldError(d, "spec.chart", "missing: spec.chart or spec.chartRef is required")
	}
	cs, err := obj(d, tmpl, "spec.chart", "spec")
	if err != nil {
		return err
	}
	if cs == nil {
		return fieldError(d, "spec.chart.spec", "missing")
	}
	r.setChartField(d, "spec.chart.spec")
	return s.chartSpec(d, cs, "spec.chart.spec", r)
}

// chartSpec resolves a HelmChart's spec: a HelmRelease's spec.chart.spec
// (helm-controller copies it into the HelmChart it makes) or the spec of a
// HelmChart object a spec.chartRef names. d is the object holding it and
// field its place there: chart (a name of a HelmRepository, a path of a
// GitRepository), version, sourceRef, valuesFiles.
func (s *Side) chartSpec(d *Doc, cs map[string]interface{}, field string, r *Release) error {
	name, err := str(d, cs, field, "chart")
	if err != nil {
		return err
	}
	if name == "" {
		return fieldError(d, field+".chart", "missing: the chart's name or path is required")
	}
	version, err := str(d, cs, field, "version")
	if err != nil {
		return err
	}
	if version == "*" {
		version = "" // the newest, as Helm reads ""
	}
	vf, err := valuesFilesOf(d, cs, field)
	if err != nil {
		return err
	}
	src, err := s.sourceRef(d, cs, field+".sourceRef")
	if err != nil {
		return err
	}
	switch src.Ref.Kind {
	case "HelmRepository":
		r.Chart, err = helmRepositoryChart(src, name, version)
		r.setValuesFiles(vf)
		return err
	case "GitRepository":
		// The chart is a path in the repository: this checkout.
		if r.Chart, err = s.localChart(d, field+".chart", name); err != nil {
			return err
		}
		r.Chart.Via = src.Ref.String()
		if vf != nil {
			// source-controller's local builder: the paths are in the
			// repository (not the chart), read now.
			err = s.mergeLocalValuesFiles(vf)
		}
		r.setValuesFiles(vf)
		return err
	case "Bucket":
		return fieldError(d, field+".sourceRef.kind", "a Bucket source is not supported: its chart is in an object store the plan does not read")
	}
	return fieldError(d, field+".sourceRef.kind", "%s is not supported (HelmRepository or GitRepository)", src.Ref.Kind)
}

// sourceRef finds the source object m's sourceRef names (at field) in the
// side, in the HelmRelease's namespace unless it names another.
func (s *Side) sourceRef(d *Doc, m map[string]interface{}, field string) (*Doc, error) {
	parent, key := field[:strings.LastIndex(field, ".")], field[strings.LastIndex(field, ".")+1:]
	ref, err := obj(d, m, parent, key)
	if err != nil {
		return nil, err
	}
	if ref == nil {
		return nil, fieldError(d, field, "missing")
	}
	return s.findRef(d, ref, field)
}

// findRef finds the object {kind, name, namespace} ref (at field) names.
func (s *Side) findRef(d *Doc, ref map[string]interface{}, field string) (*Doc, error) {
	kind, err := str(d, ref, field, "kind")
	if err != nil {
		return nil, err
	}
	name, err := str(d, ref, field, "name")
	if err != nil {
		return nil, err
	}
	ns, err := str(d, ref, field, "namespace")
	if err != nil {
		return nil, err
	}
	if kind == "" || name == "" {
		return nil, fieldError(d, field, "kind and name are required")
	}
	if err := checkName(d, field+".name", name, validation.IsDNS1123Subdomain); err != nil {
		return nil, err
	}
	if err := checkName(d, field+".namespace", ns, validation.IsDNS1123Label); err != nil {
		return nil, err
	}
	if ns == "" {
		ns = d.Ref.Namespace
	}
	src := s.find(kind, ns, name)
	if src == nil || !strings.HasPrefix(src.Ref.APIVersion, fluxSourceGroup) {
		return nil, fieldError(d, field, "%s %s/%s is not in the files: the chart's source must be committed beside the HelmRelease", kind, ns, name)
	}
	return src, nil
}

// helmRepositoryChart is chart name at version from the HelmRepository
// src: an HTTP(S) chart repository, or an OCI one (spec.type: oci).
func helmRepositoryChart(src *Doc, name, version string) (Chart, error) {
	spec, _ := src.Object["spec"].(map[string]interface{})
	url, err := str(src, spec, "spec", "url")
	if err != nil {
		return Chart{}, err
	}
	if url == "" {
		return Chart{}, fieldError(src, "spec.url", "missing")
	}
	typ, _ := spec["type"].(string)
	insecure, _ := spec["insecure"].(bool)
	if typ == "oci" || strings.HasPrefix(url, "oci://") {
		return Chart{Name: strings.TrimSuffix(url, "/") + "/" + name, Version: version, PlainHTTP: insecure, Via: src.Ref.String()}, nil
	}
	return Chart{RepoURL: url, Name: name, Version: version, Via: src.Ref.String()}, nil
}

// chartRef resolves spec.chartRef: an OCIRepository or a HelmChart of the
// files (helm-controller's two kinds; its namespace defaults to the
// HelmRelease's).
func (s *Side) chartRef(d *Doc, ref map[string]interface{}, r *Release) error {
	src, err := s.findRef(d, ref, "spec.chartRef")
	if err != nil {
		return err
	}
	spec, err := obj(src, src.Object, "", "spec")
	if err != nil {
		return err
	}
	if spec == nil {
		return fieldError(src, "spec", "missing")
	}
	switch src.Ref.Kind {
	case "HelmChart":
		return s.chartSpec(src, spec, "spec", r)
	case "OCIRepository":
		r.Chart, err = ociRepositoryChart(src, spec)
		return err
	}
	return fieldError(d, "spec.chartRef.kind", "%s is not supported (OCIRepository or HelmChart)", src.Ref.Kind)
}

// ociDigest is an OCI content digest as the distribution spec writes it.
var ociDigest = regexp.MustCompile(`^sha(256:[a-f0-9]{64}|384:[a-f0-9]{96}|512:[a-f0-9]{128})$`)

// ociRepositoryChart is the chart an OCIRepository src names, pinned as
// source-controller's getArtifactRef pins it (checked in
// fluxcd/source-controller internal/controller/ocirepository_controller.go):
// ref.digest first, else the newest tag matching ref.semver, else ref.tag,
// else the tag "latest".
func ociRepositoryChart(src *Doc, spec map[string]interface{}) (Chart, error) {
	url, err := str(src, spec, "spec", "url")
	if err != nil {
		return Chart{}, err
	}
	if !strings.HasPrefix(url, "oci://") {
		return Chart{}, fieldError(src, "spec.url", "%q: want oci://…", url)
	}
	at, err := obj(src, spec, "spec", "ref")
	if err != nil {
		return Chart{}, err
	}
	ref := map[string]string{}
	for _, k := range []string{"digest", "semver", "semverFilter", "tag"} {
		if ref[k], err = str(src, at, "spec.ref", k); err != nil {
			return Chart{}, err
		}
	}
	insecure, _ := spec["insecure"].(bool)
	c := Chart{Name: url, PlainHTTP: insecure, Via: src.Ref.String()}
	switch {
	case ref["digest"] != "":
		if !ociDigest.MatchString(ref["digest"]) {
			return Chart{}, fieldError(src, "spec.ref.digest", "%q is not a digest (sha256:…)", ref["digest"])
		}
		c.Name += "@" + ref["digest"]
	case ref["semver"] != "":
		if ref["semverFilter"] != "" {
			return Chart{}, fieldError(src, "spec.ref.semverFilter", "not supported; pin the chart by semver, tag or digest")
		}
		c.Version = ref["semver"]
	case ref["tag"] != "":
		c.Tag = ref["tag"]
	default:
		c.Tag = "latest"
	}
	return c, nil
}

// localChart is the chart at rel, a path in the side's checkout, with
// the digest of its files: a pull request may change the chart itself.
func (s *Side) localChart(d *Doc, field, rel string) (Chart, error) {
	dir := filepath.Join(s.Root, filepath.FromSlash(rel))
	// inside first: whether a path out of the checkout exists is not told.
	if _, err := s.inside(filepath.Join(dir, "Chart.yaml")); os.IsNotExist(err) {
		return Chart{}, fieldError(d, field, "%s is not a chart directory (no Chart.yaml)", dir)
	} else if err != nil {
		return Chart{}, fieldError(d, field, "%v", err)
	}
	digest, err := s.dirDigest(dir)
	if err != nil {
		return Chart{}, fieldError(d, field, "%v", err)
	}
	return Chart{Path: dir, Dir: filepath.ToSlash(filepath.Clean(rel)), Digest: digest}, nil
}

// dirDigest is the SHA-256 of the files under dir, their names and
// contents, each read bounded, walked as Helm's loader walks them
// (walkChart: no link may lead out of the checkout).
func (s *Side) dirDigest(dir string) (string, error) {
	h := sha256.New()
	var total int64
	err := s.walkChart(dir, func(rel, file string) error {
		data, err := inputfile.Read(file, "a chart file", inputfile.ValuesMax)
		if err != nil {
			return err
		}
		if total += int64(len(data)); total > BytesMax {
			return fmt.Errorf("%s: the chart holds more than %s", dir, inputfile.Size(BytesMax))
		}
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(data))
		h.Write(data)
		return nil
	})
	return fmt.Sprintf("%x", h.Sum(nil)), err
}

// helmReleaseValues merges the values as helm-controller does
// (ChartValuesFromReferences): each valuesFrom in order, whole documents
// merged or one value put at targetPath, then spec.values over them.
func (s *Side) helmReleaseValues(d *Doc, spec map[string]interface{}, r *Release) (map[string]interface{}, error) {
	refs, err := list(d, spec, "spec", "valuesFrom")
	if err != nil {
		return nil, err
	}
	result := map[string]interface{}{}
	for i, item := range refs {
		field := fmt.Sprintf("spec.valuesFrom[%d]", i)
		ref, ok := item.(map[string]interface{})
		if !ok {
			return nil, fieldError(d, field, "want a map")
		}
		data, found, err := s.valuesFrom(d, ref, field, r)
		if err != nil {
			return nil, err
		}
		if !found {
			continue
		}
		// The masker knows a Secret's value whole; a template renders
		// single values of it, which it must know too. A parser's error
		// can quote a piece of the value (after a comma), so a Secret's
		// says only what is wrong.
		secret := ref["kind"] == "Secret"
		if target, _ := ref["targetPath"].(string); target != "" {
			if secret {
				leaves := map[string]interface{}{}
				if replacePathValue(leaves, target, data) == nil {
					s.addSecretLeaves(leaves)
				}
			}
			if err := replacePathValue(result, target, data); err != nil {
				if secret {
					return nil, fieldError(d, field+".targetPath", "%s: the Secret's value does not parse as --set parses it (a comma, bracket or equals sign in it? quote it to take it as a string); not shown, as it is secret", target)
				}
				return nil, fieldError(d, field+".targetPath", "%s: %v", target, err)
			}
			continue
		}
		var vals map[string]interface{}
		if err := sigsyaml.Unmarshal([]byte(data), &vals); err != nil {
			if secret {
				return nil, fieldError(d, field, "the Secret's values are not a YAML map (the parser's message is not shown: it can quote the value)")
			}
			return nil, fieldError(d, field, "the values are not a YAML map: %v", err)
		}
		if secret {
			s.addSecretLeaves(vals)
		}
		result = mergeMaps(result, vals)
	}
	inline, err := obj(d, spec, "spec", "values")
	if err != nil {
		return nil, err
	}
	return mergeMaps(result, jsonValues(inline)), nil
}

// valuesFrom reads the key a valuesFrom entry names in a ConfigMap or a
// Secret of the files; an optional one that is missing is found false,
// with a note; a required one is an error naming it.
func (s *Side) valuesFrom(d *Doc, ref map[string]interface{}, field string, r *Release) (string, bool, error) {
	kind, _ := ref["kind"].(string)
	name, _ := ref["name"].(string)
	key, _ := ref["valuesKey"].(string)
	optional, _ := ref["optional"].(bool)
	if key == "" {
		key = defaultValuesKey
	}
	if kind != "ConfigMap" && kind != "Secret" {
		return "", false, fieldError(d, field+".kind", "%q: want ConfigMap or Secret", kind)
	}
	if name == "" {
		return "", false, fieldError(d, field+".name", "required")
	}
	if err := checkName(d, field+".name", name, validation.IsDNS1123Subdomain); err != nil {
		return "", false, err
	}
	missing := func(what string) (string, bool, error) {
		if optional {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: optional %s, left out as helm-controller leaves it out", field, what))
			return "", false, nil
		}
		return "", false, fieldError(d, field, "%s (commit it beside the HelmRelease, or mark it optional)", what)
	}
	src := s.find(kind, d.Ref.Namespace, name)
	if src == nil {
		return missing(fmt.Sprintf("%s %s/%s is not in the files", kind, d.Ref.Namespace, name))
	}
	data, ok, err := dataKey(src, key)
	if err != nil {
		return "", false, fieldError(d, field, "%v", err)
	}
	if !ok {
		return missing(fmt.Sprintf("%s %s/%s has no key %q", kind, d.Ref.Namespace, name, key))
	}
	r.Sources = append(r.Sources, src)
	return data, true, nil
}

// addSecretLeaves adds every leaf of v, values taken from a Secret, to the
// side's SecretValues as a template prints it: a string as it is, a number
// as text/template and quote print it (fmt's %v: 1.2345678e+07) and as
// toYaml and toJson do (12345678). Booleans and nulls are left out: "true"
// and "false" are in every report, and a guess finds them anyway.
func (s *Side) addSecretLeaves(v interface{}) {
	switch v := v.(type) {
	case map[string]interface{}:
		for _, x := range v {
			s.addSecretLeaves(x)
		}
	case []interface{}:
		for _, x := range v {
			s.addSecretLeaves(x)
		}
	case string:
		s.secretValues = append(s.secretValues, []byte(v))
	case float64:
		s.secretValues = append(s.secretValues, []byte(fmt.Sprint(v)), []byte(strconv.FormatFloat(v, 'f', -1, 64)))
	case int64:
		s.secretValues = append(s.secretValues, []byte(strconv.FormatInt(v, 10)))
	}
}

// dataKey is key of a ConfigMap's data, or of a Secret's stringData or
// (decoded) data.
func dataKey(d *Doc, key string) (string, bool, error) {
	if err := refuseEncrypted(d); err != nil {
		return "", false, err
	}
	if data, _ := d.Object["stringData"].(map[string]interface{}); data != nil && d.Ref.Kind == "Secret" {
		if v, ok := data[key].(string); ok {
			return v, true, nil
		}
	}
	data, _ := d.Object["data"].(map[string]interface{})
	v, ok := data[key].(string)
	if !ok {
		return "", false, nil
	}
	if d.Ref.Kind != "Secret" {
		return v, true, nil
	}
	raw, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return "", false, fieldError(d, "data."+key, "not base64 (an encrypted Secret, SOPS or sealed, cannot be read here)")
	}
	return string(raw), true, nil
}

// refuseEncrypted is an error naming d when SOPS encrypted it (a top-level
// sops map, as sops writes it): its values cannot be read where no key is.
func refuseEncrypted(d *Doc) error {
	if m, ok := d.Object["sops"].(map[string]interface{}); ok && len(m) > 0 {
		return fmt.Errorf("%s (%s:%d) is encrypted with SOPS: its values cannot be read without its key, which the plan does not have", d.Ref, d.File, d.Line)
	}
	return nil
}

// replacePathValue puts value at path as helm-controller does
// (ReplacePathValue): parsed as --set parses it, or as a string when it
// is quoted.
func replacePathValue(values map[string]interface{}, path, value string) error {
	quoted := len(value) >= 2 && (strings.HasPrefix(value, `"`) && strings.HasSuffix(value, `"`) || strings.HasPrefix(value, "'") && strings.HasSuffix(value, "'"))
	if quoted {
		return strvals.ParseIntoString(path+"="+strings.Trim(value, `"'`), values)
	}
	return strvals.ParseInto(path+"="+value, values)
}

// mergeMaps merges b into a copy of a, b winning, maps merged key by key
// (fluxcd/pkg's transform.MergeMaps).
func mergeMaps(a, b map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if vm, ok := v.(map[string]interface{}); ok {
			if bv, ok := out[k].(map[string]interface{}); ok {
				out[k] = mergeMaps(bv, vm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// jsonValues is v as the API server hands it to the controller: JSON,
// where every number is a float64 (helm-controller reads spec.values as
// apiextensions JSON).
func jsonValues(v map[string]interface{}) map[string]interface{} {
	if v == nil {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out map[string]interface{}
	if json.Unmarshal(data, &out) != nil {
		return v
	}
	return out
}
