package gitops

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation"
)

// What kustomize-controller reads of a Flux Kustomization.
const (
	kustomizeGroup  = "kustomize.toolkit.fluxcd.io/"
	kindKustomize   = "Kustomization"
	substituteKey   = "kustomize.toolkit.fluxcd.io/substitute"
	substituteOff   = "disabled"
	fluxGitRepoKind = "GitRepository"
)

// varName is the name a substitution variable must have (fluxcd/pkg
// kustomize varsubRegex).
var varName = regexp.MustCompile(`^[_[:alpha:]][_[:alpha:][:digit:]]*$`)

// kustomization is what the plan takes of a Flux Kustomization: the
// directory of the checkout it builds, its targetNamespace and its
// postBuild variables.
type kustomization struct {
	doc    *Doc
	dir    string
	target string
	// vars are postBuild's variables, sources the ConfigMaps and Secrets
	// they came from.
	vars    map[string]string
	sources []*Doc
}

// applyKustomizations does to the objects of s what the Flux
// Kustomizations of s do to them once kustomize-controller builds them
// (checked in fluxcd/kustomize-controller and fluxcd/pkg kustomize
// kustomize_generator.go, kustomize_varsub.go): an object in a file under
// a Kustomization's spec.path (a path of this checkout: its sourceRef, a
// GitRepository, is taken to be this repository) takes its
// targetNamespace, then postBuild's substitution of ${VAR} with the vars of
// substituteFrom (ConfigMaps and Secrets of the files, in the
// Kustomization's namespace, in order; optional ones may be missing) and
// then of substitute, with fluxcd/pkg/envsubst as the controller runs it
// (not strict: an unset variable is empty, ${VAR:=default} its default),
// unless the object is labelled or annotated
// kustomize.toolkit.fluxcd.io/substitute: disabled. A file under several
// Kustomizations' paths belongs to the deepest; when several share that
// path, each builds its own copy of the file's objects.
func (s *Side) applyKustomizations() error {
	var ks []*kustomization
	for _, d := range s.Docs {
		if d.Ref.Kind != kindKustomize || !strings.HasPrefix(d.Ref.APIVersion, kustomizeGroup) {
			continue
		}
		k, err := s.readKustomization(d)
		if err != nil {
			return err
		}
		if k != nil {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		return nil
	}
	// kustomize build sets the namespace first …
	var docs []*Doc
	owner := map[*Doc]*kustomization{}
	for _, d := range s.Docs {
		owners := deepest(ks, d.File)
		if len(owners) == 0 {
			docs = append(docs, d)
			continue
		}
		for _, k := range owners {
			c, err := k.build(d)
			if err != nil {
				return err
			}
			owner[c] = k
			docs = append(docs, c)
		}
	}
	s.Docs = docs
	// … then postBuild substitutes, with the variables of the objects as
	// the cluster holds them.
	for _, k := range ks {
		if err := s.loadVars(k); err != nil {
			return err
		}
	}
	for i, d := range s.Docs {
		if k := owner[d]; k != nil && len(k.vars) > 0 {
			c, err := k.substitute(d)
			if err != nil {
				return err
			}
			s.Docs[i] = c
		}
	}
	return nil
}

// readKustomization reads d; nil when its source is not this checkout.
func (s *Side) readKustomization(d *Doc) (*kustomization, error) {
	spec, err := obj(d, d.Object, "", "spec")
	if err != nil {
		return nil, err
	}
	ref, err := obj(d, spec, "spec", "sourceRef")
	if err != nil {
		return nil, err
	}
	if kind, _ := ref["kind"].(string); kind != fluxGitRepoKind {
		return nil, nil // an OCIRepository or a Bucket: files of no checkout
	}
	path, err := str(d, spec, "spec", "path")
	if err != nil {
		return nil, err
	}
	k := &kustomization{doc: d, dir: filepath.Join(s.Root, filepath.FromSlash(strings.TrimPrefix(path, "/")))}
	if _, err := s.inside(k.dir); err != nil && !os.IsNotExist(err) {
		return nil, fieldError(d, "spec.path", "%v", err)
	}
	if k.target, err = str(d, spec, "spec", "targetNamespace"); err != nil {
		return nil, err
	}
	if err := checkName(d, "spec.targetNamespace", k.target, validation.IsDNS1123Label); err != nil {
		return nil, err
	}
	return k, nil
}

// deepest are the Kustomizations whose directory holds file, the deepest
// directory's.
func deepest(ks []*kustomization, file string) []*kustomization {
	var out []*kustomization
	best := -1
	for _, k := range ks {
		if rel, err := filepath.Rel(k.dir, file); err != nil || escapes(rel) {
			continue
		}
		switch n := len(filepath.Clean(k.dir)); {
		case n > best:
			out, best = []*kustomization{k}, n
		case n == best:
			out = append(out, k)
		}
	}
	return out
}

// build is d as k's kustomize build leaves it: a copy, in k's
// targetNamespace when d is namespaced. The copy keeps d's nodes for the
// lines a reviewer reads.
func (k *kustomization) build(d *Doc) (*Doc, error) {
	n, err := copyNode(d.Node)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %w", d.File, d.Line, err)
	}
	if k.target != "" && namespaced(d.Ref.Kind) {
		setNamespace(n, k.target)
	}
	text, err := yaml.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %w", d.File, d.Line, err)
	}
	c, err := rebuilt(d, text)
	if err != nil {
		return nil, err
	}
	c.BuiltBy = fmt.Sprintf("%s (%s:%d)", k.doc.Ref, k.doc.File, k.doc.Line)
	return c, nil
}

// substitute is d after k's postBuild substitution.
func (k *kustomization) substitute(d *Doc) (*Doc, error) {
	meta, _ := d.Object["metadata"].(map[string]interface{})
	for _, key := range []string{"labels", "annotations"} {
		if m, _ := meta[key].(map[string]interface{}); m[substituteKey] == substituteOff {
			return d, nil
		}
	}
	text, err := yaml.Marshal(d.Node)
	if err != nil {
		return nil, err
	}
	if d.Built != nil {
		text = d.Built
	}
	out, err := envsubst.Eval(string(text), func(name string) (string, bool) { return k.vars[name], true })
	if err != nil {
		return nil, fieldError(k.doc, "spec.postBuild", "%s (%s:%d): variable substitution: %v", d.Ref, d.File, d.Line, err)
	}
	c, err := rebuilt(d, []byte(out))
	if err != nil {
		return nil, fieldError(k.doc, "spec.postBuild", "%s (%s:%d) after substitution: %v", d.Ref, d.File, d.Line, err)
	}
	c.Vars = append(c.Vars, k.sources...)
	return c, nil
}

// rebuilt is the object of text in place of d: d's file and nodes (its
// lines), text's object and identity.
func rebuilt(d *Doc, text []byte) (*Doc, error) {
	docs, err := parseDocs(d.File, text)
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("%s:%d: not one object once built", d.File, d.Line)
	}
	c := docs[0]
	c.Line, c.Node, c.Built, c.BuiltBy, c.Vars = d.Line, d.Node, text, d.BuiltBy, d.Vars
	return c, nil
}

// loadVars reads k's postBuild variables: substituteFrom's, then
// substitute's over them, each with its line breaks removed
// (LoadVariables, SubstituteVariables).
func (s *Side) loadVars(k *kustomization) error {
	d := k.doc
	spec, _ := d.Object["spec"].(map[string]interface{})
	post, err := obj(d, spec, "spec", "postBuild")
	if err != nil || post == nil {
		return err
	}
	k.vars = map[string]string{}
	from, err := list(d, post, "spec.postBuild", "substituteFrom")
	if err != nil {
		return err
	}
	for i, item := range from {
		field := fmt.Sprintf("spec.postBuild.substituteFrom[%d]", i)
		ref, ok := item.(map[string]interface{})
		if !ok {
			return fieldError(d, field, "want a map")
		}
		kind, _ := ref["kind"].(string)
		name, _ := ref["name"].(string)
		optional, _ := ref["optional"].(bool)
		if kind != "ConfigMap" && kind != "Secret" {
			return fieldError(d, field+".kind", "%q: want ConfigMap or Secret", kind)
		}
		if err := checkName(d, field+".name", name, validation.IsDNS1123Subdomain); err != nil {
			return err
		}
		src := s.find(kind, d.Ref.Namespace, name)
		if src == nil {
			if optional {
				continue
			}
			return fieldError(d, field, "%s %s/%s is not in the files (commit it beside the Kustomization, or mark it optional)", kind, d.Ref.Namespace, name)
		}
		vals, err := s.dataValues(src)
		if err != nil {
			return fieldError(d, field, "%v", err)
		}
		for key, v := range vals {
			k.vars[key] = strings.ReplaceAll(v, "\n", "")
			if kind == "Secret" && k.vars[key] != v {
				s.secretValues = append(s.secretValues, []byte(k.vars[key]))
			}
		}
		k.sources = append(k.sources, src)
	}
	inline, err := obj(d, post, "spec.postBuild", "substitute")
	if err != nil {
		return err
	}
	for key, v := range inline {
		str, ok := v.(string)
		if !ok {
			return fieldError(d, "spec.postBuild.substitute."+key, "want a string, got %T", v)
		}
		k.vars[key] = strings.ReplaceAll(str, "\n", "")
	}
	for key := range k.vars {
		if !varName.MatchString(key) {
			return fieldError(d, "spec.postBuild", "variable %q: the name must match %s", key, varName)
		}
	}
	return nil
}

// dataValues are the values of a ConfigMap's data, or of a Secret's data
// (decoded) and stringData (the API server merges it into data).
func (s *Side) dataValues(d *Doc) (map[string]string, error) {
	if err := refuseEncrypted(d); err != nil {
		return nil, err
	}
	out := map[string]string{}
	data, _ := d.Object["data"].(map[string]interface{})
	for key, v := range data {
		str, _ := v.(string)
		if d.Ref.Kind == "Secret" {
			raw, err := base64.StdEncoding.DecodeString(str)
			if err != nil {
				return nil, fieldError(d, "data."+key, "not base64")
			}
			str = string(raw)
		}
		out[key] = str
	}
	if d.Ref.Kind == "Secret" {
		strs, _ := d.Object["stringData"].(map[string]interface{})
		for key, v := range strs {
			out[key], _ = v.(string)
		}
	}
	return out, nil
}

// SecretValues are the forms of the Secrets' values of s that are not
// their values as written: a postBuild variable, its line breaks removed;
// each value a valuesFrom takes from a Secret's values (complete once
// Changes has resolved s). The caller masks them with the Secrets of s.
func (s *Side) SecretValues() [][]byte { return s.secretValues }

// copyNode is a deep copy of n.
func copyNode(n *yaml.Node) (*yaml.Node, error) {
	text, err := yaml.Marshal(n)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return nil, err
	}
	return doc.Content[0], nil
}

// setNamespace sets metadata.namespace of the object n to ns.
func setNamespace(n *yaml.Node, ns string) {
	meta := child(n, "metadata")
	if meta == nil || meta.Kind != yaml.MappingNode {
		return
	}
	if v := child(meta, "namespace"); v != nil {
		v.Kind, v.Tag, v.Value, v.Style = yaml.ScalarNode, "!!str", ns, 0
		return
	}
	meta.Content = append(meta.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "namespace"}, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: ns})
}

// namespaced reports whether objects of kind take a namespace: every kind
// but the cluster-scoped ones a GitOps repository commonly holds, which
// kustomize's namespace transformer leaves alone.
func namespaced(kind string) bool {
	switch kind {
	case "Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "PriorityClass", "StorageClass",
		"PersistentVolume", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "APIService", "IngressClass", "RuntimeClass":
		return false
	}
	return true
}
